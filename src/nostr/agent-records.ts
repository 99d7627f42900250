/**
 * The records Buzz Desktop reads to offer an agent it does not run itself in its @-picker
 * (docs/protocol.md "Buzz Desktop"): the agent's kind 0 profile, its kind 10100 directory
 * entry, the owner's kind 30177 record, and the kind 9000 `bot` seat. Pure builders and
 * merges: what is on the relay goes in, the template to publish (or nothing) comes out.
 *
 * Both the profile and the entry are read-merged: other clients (Buzz's own CLI writes a
 * 10100 holding only `channel_add_policy`) own fields of the same replaceable event, and
 * writing ours over theirs would erase them.
 */
import type { Event, EventTemplate } from "nostr-tools";
import { KIND } from "./kinds.js";
import { nowSec } from "../base/time.js";

/** The profile fields a config sets; any it leaves out are kept from the profile on the relay. */
export interface ProfileFields {
  name?: string;
  display_name?: string;
  about?: string;
  picture?: string;
}

/** Desktop's `RespondTo` has no `nobody` (docs/protocol.md "Buzz Desktop"): the entry never says it. */
export type DirectoryRespondTo = "anyone" | "allowlist";

export interface DirectoryFields {
  name: string;
  respond_to: DirectoryRespondTo;
  /** Lowercase 64-hex keys; compared lower-cased by Desktop. */
  respond_to_allowlist: string[];
  channel_ids: string[];
}

/** Written when the relay's record has none: the relay requires it, and only the owner may add the agent elsewhere. */
export const DEFAULT_ADD_POLICY = "owner_only";

export interface Merged {
  /** The event to publish, or undefined when the relay already holds exactly this. */
  template?: EventTemplate;
  /** What was wrong with the record on the relay (replaced by a well-formed merge). */
  problems: string[];
}

type Obj = Record<string, unknown>;

/** A record's content as a JSON object (`{}` with the problems when it is not one). */
export function parseObject(ev: Event | undefined, what: string): { obj: Obj; problems: string[] } {
  if (!ev) return { obj: {}, problems: [] };
  let v: unknown;
  try {
    v = JSON.parse(ev.content);
  } catch {
    return { obj: {}, problems: [`the ${what} on the relay is not JSON`] };
  }
  if (Array.isArray(v)) return { obj: {}, problems: [`the ${what} on the relay is a JSON array, not an object`] };
  if (typeof v !== "object" || v === null) return { obj: {}, problems: [`the ${what} on the relay is not a JSON object`] };
  return { obj: v as Obj, problems: [] };
}

const sameTags = (a: string[][], b: string[][]) => JSON.stringify(a) === JSON.stringify(b);

/** Same keys and values, whatever the order: a reorder alone is no reason to spend a frame. */
function sameObject(a: Obj, b: Obj): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => k in b && JSON.stringify(a[k]) === JSON.stringify(b[k]));
}

/**
 * The kind 0 to publish: the relay's profile with the configured fields laid over it (Buzz's
 * relay treats a kind 0 as the whole state, so fields others set are carried along); a
 * profile without a `name` gets `defaultName`, without a `display_name` its `name`. The
 * `auth` tag is replaced by the configured one; without one configured, tags on the relay stay.
 * `displayName` is the result's, also when nothing needs publishing.
 */
export function mergeProfile(
  existing: Event | undefined,
  fields: ProfileFields,
  defaultName: string,
  authTag?: string[],
): Merged & { displayName: string } {
  const { obj, problems } = parseObject(existing, "profile");
  const next: Obj = { ...obj };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) next[k] = v;
  const text = (v: unknown) => (typeof v === "string" && v.trim() !== "" ? v : undefined);
  next.name = text(next.name) ?? defaultName;
  next.display_name = text(next.display_name) ?? next.name;
  const displayName = next.display_name as string;
  const oldTags = existing?.tags.map((t) => [...t]) ?? [];
  const tags = authTag ? [...oldTags.filter((t) => t[0] !== "auth"), [...authTag]] : oldTags;
  if (existing && problems.length === 0 && sameObject(obj, next) && sameTags(oldTags, tags)) return { problems, displayName };
  return { template: { kind: KIND.profile, created_at: nowSec(), tags, content: JSON.stringify(next) }, problems, displayName };
}

const STRING_FIELDS = ["name", "display_name", "agent_type", "status", "channel_add_policy"];
const LIST_FIELDS = ["channels", "channel_ids", "capabilities", "respond_to_allowlist"];
const RESPOND_TO = ["owner-only", "allowlist", "anyone"];

/**
 * Fields of the relay's entry that an older Desktop's strict parse of every agent at once
 * would fail on (a wrong type, a `respond_to` it does not know): dropped, each named.
 */
function wellTyped(obj: Obj): { kept: Obj; problems: string[] } {
  const kept: Obj = {};
  const problems: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    const isString = typeof v === "string";
    const isList = Array.isArray(v) && v.every((x) => typeof x === "string");
    let bad = false;
    if (STRING_FIELDS.includes(k)) bad = !isString;
    else if (LIST_FIELDS.includes(k)) bad = !isList;
    else if (k === "respond_to") bad = v !== null && !(isString && RESPOND_TO.includes(v));
    if (bad) problems.push(`field ${k} of the directory entry on the relay has a value Desktop cannot read (${JSON.stringify(v)})`);
    else kept[k] = v;
  }
  return { kept, problems };
}

/**
 * The kind 10100 to publish: the relay's entry (unknown fields kept, wrong-typed ones
 * dropped) with our four fields laid over it, and its `channel_add_policy` kept, or
 * `owner_only` written when it has none.
 */
export function mergeDirectory(existing: Event | undefined, fields: DirectoryFields): Merged {
  const parsed = parseObject(existing, "directory entry");
  const { kept, problems } = wellTyped(parsed.obj);
  problems.unshift(...parsed.problems);
  const next: Obj = { ...kept, ...fields };
  if (typeof next.channel_add_policy !== "string") next.channel_add_policy = DEFAULT_ADD_POLICY;
  if (existing && problems.length === 0 && sameObject(parsed.obj, next)) return { problems };
  return { template: { kind: KIND.agentDirectory, created_at: nowSec(), tags: [], content: JSON.stringify(next) }, problems };
}

/** Desktop's `ManagedAgentEventContent`: `parallelism` and `respond_to` are required; the content is public. */
export interface ManagedAgentFields {
  name: string;
  respond_to: DirectoryRespondTo;
  respond_to_allowlist: string[];
  parallelism: number;
}

/** The owner-signed kind 30177 naming the agent (`d` = its hex key). */
export function managedAgentRecord(agentHex: string, fields: ManagedAgentFields): EventTemplate {
  return { kind: KIND.managedAgent, created_at: nowSec(), tags: [["d", agentHex]], content: JSON.stringify(fields) };
}

/** NIP-29 put-user of oneself with role `bot` (a kind 9021 join would seat the agent as `member`). */
export function botSeat(channel: string, agentHex: string): EventTemplate {
  return {
    kind: KIND.groupPutUser,
    created_at: nowSec(),
    tags: [
      ["h", channel],
      ["p", agentHex],
      ["role", "bot"],
    ],
    content: "",
  };
}
