/**
 * The agent's working directory: `agent.cwd` with `{channel}` replaced by the channel's
 * directory name, absolute (ACP requires absolute paths in session/new) and created if
 * missing. The directory name is a readable slug of the channel's name followed by a hash
 * of its id, so two channels whose names slug alike ("secret" and "Secret!") never share a
 * working directory or a HOME (docs/security.md); it cannot climb out of the template's
 * directory: only [a-z0-9_-].
 */
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";

export const CHANNEL_PLACEHOLDER = "{channel}";

/** A channel as the agent's directories know it: its id decides, its name only reads well. */
export interface ChannelRef {
  id: string;
  name: string;
}

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

/**
 * The name `{channel}` expands to (and a sandboxed channel's HOME is called): the slug of
 * its name, then 16 hex digits of the sha256 of its id — 64 bits, so no one can make a
 * channel id that lands on another channel's directory.
 */
export function channelDirName(ch: ChannelRef): string {
  return `${channelSlug(ch.name)}-${createHash("sha256").update(ch.id).digest("hex").slice(0, 16)}`;
}

/** The session cwd for a channel, absolute; created (recursively) unless `create` is false. */
export function agentCwd(template: string, ch: ChannelRef, create = true): string {
  const dir = resolve(template.split(CHANNEL_PLACEHOLDER).join(channelDirName(ch)));
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
