/**
 * `doctor`'s `mentionable` line: per configured channel, who can @-mention the agent from
 * Buzz Desktop and what is missing, by Desktop's rules (buzz/desktop-view.ts) applied to the
 * records as they stand on the relay, never to what the daemon meant to write
 * (docs/protocol.md "Buzz Desktop"). Informational: it never fails doctor.
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
  const details = audiences.map(({ ch, a, nobody }) => line(ch.name, a, nobody));
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
