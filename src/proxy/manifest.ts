/**
 * The proxy's manifest read by hand (`--manifest`): a YAML file holding the config's `mcp`
 * section, read and checked as the config is (config/load.ts, config/schema.ts). Under the
 * daemon it arrives over the link as JSON with milliseconds; that shape is part of the
 * daemon↔proxy contract (contract/manifest.ts).
 */
import { readFileSync } from "node:fs";
import { ConfigError, loadSectionText } from "../config/load.js";
import { mcpSchema } from "../config/schema.js";
import { manifestFromConfig, type ProxyManifest } from "../contract/manifest.js";

export { manifestFromConfig, type ManifestServer, type ProxyManifest } from "../contract/manifest.js";

/** buzz-agent's hook timeout is 2.5 s; our merged answer must land well before it. */
export const DEFAULT_HOOK_DEADLINE_MS = 2000;
/** buzz-agent gives `tools/list` 30 s; we answer with what we have after this. */
export const DEFAULT_LIST_TIMEOUT_MS = 15_000;

export class ManifestError extends Error {
  override name = "ManifestError";
}

/**
 * Reads and validates a `--manifest` YAML file; errors name the file, the line and the key.
 * `transport` is accepted so the config's section can be copied as is: a proxy on stdio is
 * the stdio transport.
 */
export function loadManifestFile(file: string): ProxyManifest {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ManifestError(`${file}: cannot read manifest: ${(err as Error).message}`);
  }
  try {
    return manifestFromConfig(loadSectionText(text, file, mcpSchema));
  } catch (err) {
    if (err instanceof ConfigError) throw new ManifestError(err.message);
    throw err;
  }
}
