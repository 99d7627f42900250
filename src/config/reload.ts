/**
 * What a reload (SIGHUP) may change: the new file against the running config.
 *
 * - Applied now, to new turns: the channel policies (`defaults`, `channels`), the MCP
 *   servers and lists (`mcp`, read when a session opens), the gates' rounds and waits, typing
 *   indicators, `shutdown_grace`, `policy`, `workflows` (the gate reads it per event), and
 *   attachments, questions and progress notes; the profile and directory entry are published again.
 * - Refused (the whole reload, the old config stays): a new identity, relay URL, state
 *   directory or state backend: the daemon cannot run half on the old and half on the new.
 * - Every other changed key needs a restart: it keeps its running value, and the reload
 *   names it ("needs a restart: http.listen"), so nothing changes silently.
 *
 * A key this file does not list is a restart key: the safe side for a key added later.
 */
import type { Config } from "./schema.js";

export interface RunningConfig {
  pubkey: string;
  config: Config;
}

export type ReloadPlan =
  /** Refused: these settings changed and only a restart applies them. */
  | { ok: false; needsRestart: string[] }
  /** The config to run with now; `needsRestart` lists the changed keys that keep their running value until a restart. */
  | { ok: true; config: Config; needsRestart: string[] };

/** Keys (and everything under them) a reload applies to new turns. */
const LIVE = [
  "defaults",
  "channels",
  "mcp",
  "gates.max_rejections",
  "gates.wait_poll",
  "gates.wait_max",
  "relay.typing",
  "shutdown_grace",
  "policy",
  // Read at each turn (and each download): docs/conversations.md.
  "attachments",
  "questions",
  "progress",
  "workflows",
  // Republished on reload (docs/protocol.md "Buzz Desktop").
  "identity.profile",
  "identity.directory",
];

/** Keys whose change makes the reload refused as a whole. */
const REFUSED = ["relay.url", "state_dir", "state"];

const under = (path: string, prefixes: string[]) => prefixes.some((p) => path === p || path.startsWith(`${p}.`));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Dotted paths of the leaves that differ (a list is one leaf). */
function changedPaths(a: unknown, b: unknown, path: string[] = [], out: string[][] = []): string[][] {
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) changedPaths(a[k], b[k], [...path, k], out);
  } else if (JSON.stringify(a) !== JSON.stringify(b)) {
    out.push(path);
  }
  return out;
}

/** `target` with the value at `path` set from `source` (removed where `source` has none). */
function keepAt(target: Record<string, unknown>, source: unknown, path: string[]): void {
  let t = target;
  let s = source;
  for (const k of path.slice(0, -1)) {
    s = isObject(s) ? s[k] : undefined;
    if (!isObject(t[k])) {
      if (s === undefined) return;
      t[k] = {};
    } else t[k] = { ...(t[k] as Record<string, unknown>) };
    t = t[k] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!;
  const v = isObject(s) ? s[last] : undefined;
  if (v === undefined) delete t[last];
  else t[last] = v;
}

export function planReload(running: RunningConfig, next: RunningConfig): ReloadPlan {
  const changed = changedPaths(running.config, next.config).map((p) => ({ path: p, key: p.join(".") }));
  const refused = [
    ...(next.pubkey !== running.pubkey ? ["identity"] : []),
    ...changed.filter((c) => under(c.key, REFUSED)).map((c) => c.key),
  ];
  if (refused.length) return { ok: false, needsRestart: refused };
  const restart = changed.filter((c) => !under(c.key, LIVE));
  const config = { ...next.config } as unknown as Record<string, unknown>;
  for (const c of restart) keepAt(config, running.config, c.path);
  return { ok: true, config: config as unknown as Config, needsRestart: restart.map((c) => c.key) };
}
