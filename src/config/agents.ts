/**
 * Several agents in one daemon (docs/configuration.md "Several agents in one daemon"): a
 * config's `agents:` list gives each agent its own part of the config, and the top-level
 * keys are the defaults they share. An entry is laid over the shared keys: mappings key by
 * key, lists and values whole. A few keys come in pairs of which one is given (a key or its
 * file): an entry that sets one of a pair replaces the shared one of either.
 *
 * The overlay is made of the YAML nodes themselves, so every value keeps its place in the
 * file: a problem is reported where it is written, in the entry or at the shared key.
 */
import { isMap, isScalar, type Document, type YAMLMap } from "yaml";

/** The daemon's own keys: one state directory, one HTTP endpoint, one log, one policy for all its agents. */
export const DAEMON_KEYS = ["state_dir", "state", "http", "log", "shutdown_grace", "policy", "team"] as const;

/** Pairs of which an entry's one replaces the shared one of either (mapping path → keys). */
const ONE_OF: { at: string[]; keys: string[] }[] = [
  { at: ["identity"], keys: ["secret_key", "secret_key_file"] },
  { at: ["identity"], keys: ["auth_tag", "auth_tag_file"] },
  { at: ["heartbeat"], keys: ["prompt", "prompt_file"] },
];

const keyOf = (k: unknown): unknown => (isScalar(k) ? k.value : k);

/** Lays `over`'s pairs onto `base` (both mappings of one document's clone). */
function overlay(base: YAMLMap, over: YAMLMap, at: string[]): void {
  const set = new Set(over.items.map((p) => keyOf(p.key)));
  for (const group of ONE_OF) {
    if (group.at.join(".") !== at.join(".") || !group.keys.some((k) => set.has(k))) continue;
    for (const k of group.keys) if (!set.has(k)) base.delete(k);
  }
  for (const pair of over.items) {
    const key = keyOf(pair.key);
    const i = base.items.findIndex((p) => keyOf(p.key) === key);
    const mine = i >= 0 ? base.items[i]!.value : undefined;
    if (isMap(mine) && isMap(pair.value)) overlay(mine, pair.value, [...at, String(key)]);
    else if (i >= 0) base.items[i] = pair;
    else base.items.push(pair);
  }
}

/**
 * The document one agent runs on: the shared keys (without `agents`) with entry `i` laid
 * over them. `doc` is left as it is.
 */
export function memberDocument(doc: Document, i: number): Document {
  const member = doc.clone();
  const entry = member.getIn(["agents", i], true);
  member.delete("agents");
  if (isMap(member.contents) && isMap(entry)) overlay(member.contents, entry, []);
  return member;
}

/** A team agent's id: the first 16 hex digits of its pubkey (its state directory, its log lines' and metrics' `agent`). */
export function agentId(pubkey: string): string {
  return pubkey.slice(0, 16);
}

/** What the team checks need of each agent's config. */
export interface MemberView {
  /** `agents[i]`, for messages. */
  label: string;
  pubkey?: string;
  /** `agent.cwd` when the entry or the shared keys set it. */
  cwd?: string;
  /** Channels it listens in with how it answers a message that mentions nobody. */
  channels: { id: string; answersUnmentioned: boolean }[];
  /** Whether `"*"` (every channel it is a member of) is among its channels, with that rule. */
  everyChannel?: { answersUnmentioned: boolean };
}

export interface TeamProblem {
  /** Where to report it: the entry index, and the key path inside it. */
  entry: number;
  path: (string | number)[];
  message: string;
}

/**
 * Two agents that would both answer one message: in a channel both listen in, each answers
 * messages that mention neither (`require_mention: false`, or `participation: channel`).
 * Every such message would get two answers. Two agents with different `respond_to` in one
 * channel are an ordinary team and pass.
 */
export function doubleAnswers(members: MemberView[]): TeamProblem[] {
  const out: TeamProblem[] = [];
  const answers = (m: MemberView, id: string): boolean | undefined => {
    const ch = m.channels.find((c) => c.id === id);
    if (ch) return ch.answersUnmentioned;
    return m.everyChannel?.answersUnmentioned;
  };
  const ids = [...new Set(members.flatMap((m) => m.channels.map((c) => c.id)))];
  for (let b = 1; b < members.length; b++) {
    for (let a = 0; a < b; a++) {
      const both = ids.filter((id) => answers(members[a]!, id) && answers(members[b]!, id));
      if (members[a]!.everyChannel?.answersUnmentioned && members[b]!.everyChannel?.answersUnmentioned) both.push("*");
      for (const id of both)
        out.push({
          entry: b,
          path: ["channels"],
          message: `${members[a]!.label} and ${members[b]!.label} would both answer every message in channel ${id === "*" ? "(every channel both are in)" : id} that mentions neither (require_mention: false or participation: channel for both): set it for one of them only`,
        });
    }
  }
  return out;
}

/** One key for two agents, or one working directory: refused, naming both. */
export function sharedByTwo(members: MemberView[]): TeamProblem[] {
  const out: TeamProblem[] = [];
  for (let b = 1; b < members.length; b++) {
    for (let a = 0; a < b; a++) {
      const [ma, mb] = [members[a]!, members[b]!];
      if (ma.pubkey && ma.pubkey === mb.pubkey)
        out.push({
          entry: b,
          path: ["identity"],
          message: `${ma.label} and ${mb.label} have the same key: each agent in a team needs its own identity (buzz-bridge keygen makes one)`,
        });
      if (ma.cwd && ma.cwd === mb.cwd)
        out.push({
          entry: b,
          path: ["agent", "cwd"],
          message: `${ma.label} and ${mb.label} have the same agent.cwd ${ma.cwd}: agents would work in each other's files; give each its own (or leave it unset: each gets one under the state directory)`,
        });
    }
  }
  return out;
}
