/**
 * The oldest Node buzz-bridge runs on: 22.13, the first 22.x whose `node:sqlite` needs no
 * flag (23.x from 23.4). The CLI checks it before any command loads, so an older Node gets
 * one line saying what to do instead of a stack trace from deep inside an import.
 * Imports nothing: the check must itself run on any Node.
 */

/** The minimum, as printed. */
export const MIN_NODE = "22.13.0";

/** True when `version` ("22.13.0", "v24.1.0") has everything buzz-bridge uses. */
export function nodeSupported(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
  if (major === 22) return minor >= 13;
  if (major === 23) return minor >= 4;
  return major > 23;
}

/** The refusal for this process's Node, or undefined when it will do. */
export function nodeRefusal(version = process.versions.node, execPath = process.execPath): string | undefined {
  if (nodeSupported(version)) return undefined;
  return (
    `buzz-bridge needs Node ${MIN_NODE} or newer (22 or 24 LTS), but this is Node ${version} (${execPath}): ` +
    "install Node 22 or 24 from your distribution's nodejs package or nodejs.org, or offline the npm registry's " +
    'node-linux-<arch> package (README, "Node"), and put it first on PATH'
  );
}
