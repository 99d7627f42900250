/**
 * The agent's working directory: `agent.cwd` with `{channel}` replaced by a slug of the
 * channel name, absolute (ACP requires absolute paths in session/new) and created if
 * missing. The slug cannot climb out of the template's directory: only [a-z0-9_-].
 */
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";

export const CHANNEL_PLACEHOLDER = "{channel}";

/** "Release Room #2" → "release-room-2"; empty or all-symbol names → "channel". */
export function channelSlug(name: string): string {
  const slug = name
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-|-$/g, "")
    .slice(0, 64);
  return slug || "channel";
}

/** The session cwd for a channel, absolute; created (recursively) unless `create` is false. */
export function agentCwd(template: string, channelName: string, create = true): string {
  const dir = resolve(template.split(CHANNEL_PLACEHOLDER).join(channelSlug(channelName)));
  if (create) mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Where a process not yet bound to a channel (the warm spare) runs: the template's part
 * before `{channel}`, so it stays inside the configured agents' area.
 */
export function spareCwd(template: string, create = true): string {
  const i = template.indexOf(CHANNEL_PLACEHOLDER);
  const dir = resolve(i < 0 ? template : template.slice(0, i) || ".");
  if (create) mkdirSync(dir, { recursive: true });
  return dir;
}
