/**
 * Channel directories named after the channel's name alone — a working directory
 * (`agent.cwd`'s `{channel}`) and a sandboxed agent's HOME (`<state_dir>/homes/`) — moved
 * to their names per channel id (cwd.ts `channelDirName`) when the daemon starts. A name
 * two known channels slug to alike is shared: it is left where it is for the operator to
 * sort out (whose files are they?), never handed to either channel.
 */
import { existsSync, renameSync } from "node:fs";
import type { Logger } from "../base/log.js";
import { join, resolve } from "node:path";
import { CHANNEL_PLACEHOLDER, channelDirName, channelSlug, type ChannelRef } from "./cwd.js";

export interface DirMove {
  channel: string;
  from: string;
  to: string;
}

export interface DirMigration {
  moved: DirMove[];
  /** Old directories left in place: several channels' names slug to them, or the new one exists already. */
  kept: Array<{ dir: string; channels: string[]; reason: "shared by channels whose names slug alike" | "the new directory exists" }>;
}

/** A per-id name ends in 16 hex digits; a directory named like one is never taken for an old one. */
const PER_ID = /-[0-9a-f]{16}$/;

/** The part of a template up to the end of the path segment holding `{channel}`: what is renamed. */
function unitOf(template: string): string | undefined {
  const at = template.indexOf(CHANNEL_PLACEHOLDER);
  if (at < 0) return undefined;
  const end = template.indexOf("/", at + CHANNEL_PLACEHOLDER.length);
  return end < 0 ? template : template.slice(0, end);
}

const expand = (unit: string, name: string) => resolve(unit.split(CHANNEL_PLACEHOLDER).join(name));

export function migrateChannelDirs(o: { cwdTemplate: string; stateDir: string; channels: ChannelRef[] }): DirMigration {
  const out: DirMigration = { moved: [], kept: [] };
  const units = [unitOf(o.cwdTemplate), join(o.stateDir, "homes", CHANNEL_PLACEHOLDER)].filter((u): u is string => !!u);
  for (const unit of units) {
    const current = new Set(o.channels.map((ch) => expand(unit, channelDirName(ch))));
    const bySlug = new Map<string, ChannelRef[]>();
    for (const ch of o.channels) {
      const slug = channelSlug(ch.name);
      if (!PER_ID.test(slug)) bySlug.set(slug, [...(bySlug.get(slug) ?? []), ch]);
    }
    for (const [slug, channels] of bySlug) {
      const from = expand(unit, slug);
      if (current.has(from) || !existsSync(from)) continue;
      const ids = channels.map((c) => c.id);
      if (channels.length > 1) {
        out.kept.push({ dir: from, channels: ids, reason: "shared by channels whose names slug alike" });
        continue;
      }
      const to = expand(unit, channelDirName(channels[0]!));
      if (existsSync(to)) {
        out.kept.push({ dir: from, channels: ids, reason: "the new directory exists" });
        continue;
      }
      renameSync(from, to);
      out.moved.push({ channel: channels[0]!.id, from, to });
    }
  }
  return out;
}

/** migrateChannelDirs, each move one info line and each directory left in place one warning; a failed move is a warning too. */
export function migrateChannelDirsLogged(o: Parameters<typeof migrateChannelDirs>[0], log: Logger): void {
  let result: DirMigration;
  try {
    result = migrateChannelDirs(o);
  } catch (err) {
    log.warn(
      { evt: "agent.dir_migration_failed", err: (err as Error).message },
      "could not move channel directories to their per-id names; the channels start with fresh ones",
    );
    return;
  }
  for (const m of result.moved)
    log.info({ evt: "agent.dir_migrated", channel: m.channel, from: m.from, to: m.to }, "moved a channel's directory to its per-id name");
  for (const k of result.kept)
    log.warn(
      { evt: "agent.dir_kept", dir: k.dir, channels: k.channels, reason: k.reason },
      `left ${k.dir} where it is (${k.reason}): each channel starts with a directory of its own; move its files to the right channel's by hand`,
    );
}
