/**
 * `doctor`'s `mentionable` line: per configured channel, who can @-mention the agent from
 * Buzz Desktop and what is missing, by Desktop's rules (buzz/desktop-view.ts) applied to the
 * records as they stand on the relay, never to what the daemon meant to write
 * (docs/protocol.md "Buzz Desktop"), and whether the directory entry there is the one this
 * config writes (what a refused publish leaves behind). Informational: it never fails doctor.
 */
import type { Event } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import type { LoadedConfig } from "../../config/load.js";
import { channelSelected, policyFor } from "../../config/schema.js";
import type { ChannelInfo } from "../../buzz/index.js";
import { attestedOwner, desktopAgent, desktopAudience, rosterRole, type Audience } from "../../buzz/desktop-view.js";
import { profileOf, shortNpub } from "../../buzz/profiles.js";
import { KIND } from "../../nostr/kinds.js";
import { tagValue } from "../../base/tags.js";
import { npub } from "../../config/keys.js";
import { directoryAudience, entryChannels } from "../../buzz/agent-records.js";
import type { CheckResult } from "./doctor-result.js";

export interface Reader {
  query(filters: Filter[]): Promise<Event[]>;
}

const newest = (events: Event[], pred: (e: Event) => boolean) => events.filter(pred).sort((a, b) => b.created_at - a.created_at)[0];

export async function mentionableCheck(reader: Reader, loaded: LoadedConfig, found: ChannelInfo[]): Promise<CheckResult> {
  const cfg = loaded.config;
  const agent = loaded.pubkey;
  const channels = [
    ...found.filter((c) => channelSelected(cfg, c.id)),
    ...cfg.channels
      .filter((e) => e.id !== "*" && !found.some((c) => c.id === e.id))
      .map((e) => ({ id: e.id, name: e.id, type: "unknown" })),
  ];
  const joinedIds = found.filter((c) => channelSelected(cfg, c.id)).map((c) => c.id);
  const filters: Filter[] = [
    { kinds: [KIND.profile], authors: [agent], limit: 1 },
    { kinds: [KIND.agentDirectory], authors: [agent], limit: 1 },
  ];
  if (joinedIds.length) filters.push({ kinds: [KIND.groupMembers], "#d": joinedIds });
  const events = await reader.query(filters);
  const profile = newest(events, (e) => e.kind === KIND.profile && e.pubkey === agent);
  const entry = newest(events, (e) => e.kind === KIND.agentDirectory && e.pubkey === agent);
  const owner = attestedOwner(agent, profile);
  const managed = owner ? await reader.query([{ kinds: [KIND.managedAgent], authors: [owner], "#d": [agent] }]) : [];
  const view = desktopAgent(agent, { profile, entry, managed });

  const audiences = channels.map((ch) => {
    const roster = newest(events, (e) => e.kind === KIND.groupMembers && tagValue(e, "d") === ch.id);
    const role = joinedIds.includes(ch.id) ? (rosterRole(roster, agent) ?? "member") : undefined;
    return { ch, a: desktopAudience(view, { type: ch.type, role }, "oss"), nobody: policyFor(cfg, ch.id).respond_to === "nobody" };
  });
  const keys = [...new Set(audiences.flatMap(({ a }) => (a.who === "list" ? a.keys : [])))];
  const names = new Map<string, string>();
  if (keys.length)
    for (const p of await reader.query([{ kinds: [KIND.profile], authors: keys }]))
      if (!names.has(p.pubkey)) names.set(p.pubkey, profileOf(p.pubkey, p).displayName);
  const label = (k: string) => (k === cfg.identity.owner ? "owner" : (names.get(k) ?? shortNpub(k)));
  const line = (name: string, a: Audience, nobody: boolean): string => {
    if (nobody) return `#${name}: nobody (respond_to: nobody)`;
    if (a.who === "anyone") return `#${name}: anyone in the channel (anyone) — ok`;
    if (a.who === "list") {
      const labels = a.keys.map(label);
      const ordered = [...labels.filter((l) => l === "owner"), ...labels.filter((l) => l !== "owner")];
      return `#${name}: ${ordered.join(", ")} (${view.respondTo}) — ok`;
    }
    return `#${name}: nobody: ${a.why}`;
  };
  const drift = cfg.identity.directory === "on" ? entryDrift(cfg, found, entry) : undefined;
  const details = audiences.map(({ ch, a, nobody }) =>
    drift?.missing.includes(ch.id) && !nobody
      ? `${line(ch.name, a, nobody)}; not in the directory entry on the relay (older Desktop builds leave it out)`
      : line(ch.name, a, nobody),
  );
  if (drift) details.push(directoryLine(drift, (id) => channels.find((c) => c.id === id)?.name ?? id));
  details.push(releaseLine(view, managed.length > 0, owner));
  const ok = audiences.filter(({ a, nobody }) => !nobody && a.who !== "nobody").length;
  return {
    name: "mentionable",
    mark: "ok",
    summary: `from Buzz Desktop in ${ok} of ${channels.length} channel${channels.length === 1 ? "" : "s"}`,
    details,
  };
}

function releaseLine(view: ReturnType<typeof desktopAgent>, hasRecord: boolean, owner: string | undefined): string {
  if (view.owner) return `release builds: owner record by ${npub(view.owner)} — ok`;
  if (!owner)
    return "release builds: the profile carries no owner (NIP-OA) tag — run buzz-bridge attest, set identity.auth_tag, then buzz-bridge register";
  return hasRecord
    ? "release builds: the owner record on the relay is not one Desktop trusts — run buzz-bridge register again"
    : "release builds: no owner record — run buzz-bridge register";
}

interface Drift {
  /** No entry on the relay at all. */
  absent: boolean;
  /** Channels the config's entry lists that the relay's does not. */
  missing: string[];
  /** How the relay's audience differs from the config's, when it does. */
  audience?: string;
}

/**
 * The entry on the relay against the one the daemon would write from this config
 * (buzz/agent-records.ts): a relay that refused the daemon's entry (`directory.refused`)
 * leaves an older one, or none, and only this comparison can show it from outside the daemon.
 */
function entryDrift(cfg: LoadedConfig["config"], found: ChannelInfo[], entry: Event | undefined): Drift {
  const want = directoryAudience(cfg, entryChannels(cfg, found), cfg.identity.owner);
  if (!entry) return { absent: true, missing: want.channel_ids };
  let c: Record<string, unknown> = {};
  try {
    const v = JSON.parse(entry.content) as unknown;
    if (typeof v === "object" && v !== null && !Array.isArray(v)) c = v as Record<string, unknown>;
  } catch {
    // Not JSON: it lists nothing and admits nobody; the daemon replaces it (directory.malformed).
  }
  const list = (v: unknown) =>
    new Set(Array.isArray(v) ? v.filter((x): x is string => typeof x === "string").map((x) => x.toLowerCase()) : []);
  const ids = list(c.channel_ids);
  const missing = want.channel_ids.filter((id) => !ids.has(id.toLowerCase()));
  const has = list(c.respond_to_allowlist);
  const lacking = want.respond_to_allowlist.filter((k) => !has.has(k));
  const audience =
    c.respond_to !== want.respond_to
      ? `respond_to ${String(c.respond_to ?? "missing")} where the config writes ${want.respond_to}`
      : lacking.length
        ? `its allowlist lacks ${lacking.map(shortNpub).join(", ")}`
        : undefined;
  return { absent: false, missing, audience };
}

function directoryLine(d: Drift, name: (id: string) => string): string {
  const why =
    "the daemon has not published it since (is it running?) or the relay refused it (directory.refused in the daemon's log says why)";
  if (d.absent) return `directory entry: none on the relay — ${why}`;
  const gaps = [
    ...(d.missing.length ? [`it does not list ${d.missing.map((id) => `#${name(id)}`).join(", ")}`] : []),
    ...(d.audience ? [d.audience] : []),
  ];
  if (!gaps.length) return "directory entry: as this config writes it — ok";
  return `directory entry: the relay's is not what this config writes (${gaps.join("; ")}) — ${why}`;
}
