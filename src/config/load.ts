/**
 * Loads a YAML config file: parse (the `yaml` library keeps source positions),
 * interpolate `${NAME}` from the environment, validate against the zod schema, read the
 * secret key. Every problem is collected and reported as `FILE:LINE:COL: key.path: message`;
 * the daemon never starts on a config it only half understood.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node, type YAMLMap } from "yaml";
import type { z } from "zod";
import * as nip19 from "nostr-tools/nip19";
import { configSchema, crossCheck, policyFor, type Config } from "./schema.js";
import { DAEMON_KEYS, agentId, doubleAnswers, memberDocument, sharedByTwo, type MemberView } from "./agents.js";
import { KeyError, parseSecretKey, pubkeyOf } from "./keys.js";
import { holdRepliesProblem, hookDeadlineProblem } from "./enforce.js";
import { resolvePaths } from "./paths.js";
import { explainYamlErrors, missingColons } from "./yaml-errors.js";
import { resolveAttestation } from "./attestation.js";
import { policyLockProblems } from "./policy-lock.js";
import { checkTrust } from "./file-trust.js";

export interface ConfigProblem {
  file: string;
  line: number;
  col: number;
  path: string;
  message: string;
}

function formatProblem(p: ConfigProblem): string {
  return `${p.file}:${p.line}:${p.col}: ${p.path ? `${p.path}: ` : ""}${p.message}`;
}

export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(readonly problems: ConfigProblem[]) {
    super(problems.map(formatProblem).join("\n"));
  }
}

export interface LoadedConfig {
  file: string;
  /** Validated config; `identity.secret_key` is replaced by "[redacted]" once read. */
  config: Config;
  secretKey: Uint8Array;
  pubkey: string;
  warnings: string[];
  /** The agent's verified NIP-OA attestation, when configured (its owner is `config.identity.owner`). */
  authTag?: string[];
  /**
   * In a config with `agents:`: this agent's id, its entry, the daemon's state directory, and
   * what of the team its sandbox must hide besides its own files (bridgePaths).
   */
  team?: {
    id: string;
    index: number;
    stateDir: string;
    hide: Array<{ label: string; path: string }>;
    /** What this entry's agent could read of the team's were it unsandboxed; empty for a team of one. */
    exposed: string[];
  };
}

type PathPart = string | number;

/** `${NAME}` or `${NAME:-fallback}` (shell style: the fallback applies when NAME is unset or empty). */
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Finds the config file per README.md "Commands": -c, else $BUZZ_BRIDGE_CONFIG, else ./buzz-bridge.yaml. */
export function resolveConfigPath(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(flag ?? env.BUZZ_BRIDGE_CONFIG ?? "buzz-bridge.yaml");
}

export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  return oneAgent(loadTeam(file, env));
}

function readConfigFile(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    const hint =
      code === "ENOENT"
        ? "; give the file with -c FILE or BUZZ_BRIDGE_CONFIG=FILE (without either, ./buzz-bridge.yaml is read); config/example.yaml is a starting point"
        : code === "EACCES"
          ? `; ${file} is not readable by this user`
          : code === "EISDIR"
            ? "; -c names a directory: give the YAML file in it"
            : "";
    throw new ConfigError([{ file, line: 1, col: 1, path: "", message: `cannot read config: ${code}${hint}` }]);
  }
}

/** For commands that need a valid config (`run`): the team, or — after writing every problem to stderr as `FILE:LINE:COL: …` — undefined, for exit code 1. */
export function loadTeamOrReport(file: string): LoadedTeam | undefined {
  try {
    return loadTeam(file);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return undefined;
  }
}

/**
 * One agent of any config (a command that acts as one identity, e.g. `tail`): a config of one
 * agent is that agent; in a team, `agent` picks one by its id (the first 16 hex digits of its
 * pubkey, as in the log's `agent` field), npub or hex pubkey, and without it the team is
 * refused, naming its agents. Problems go to stderr (`FILE:LINE:COL: …`) and give undefined,
 * for exit code 1.
 */
export function loadMemberOrReport(file: string, agent: string | undefined): LoadedConfig | undefined {
  const team = loadTeamOrReport(file);
  if (!team) return undefined;
  const [first] = team.members;
  const listed = () => team.members.map((m) => `${m.team!.id} (agents[${m.team!.index}], ${nip19.npubEncode(m.pubkey)})`).join(", ");
  if (team.members.length === 1 && !first!.team) {
    if (agent === undefined || agentMatches(first!, agent)) return first;
    process.stderr.write(`${file}: --agent ${agent} is not this config's agent (${nip19.npubEncode(first!.pubkey)})\n`);
    return undefined;
  }
  if (agent === undefined) {
    process.stderr.write(`${file}: this config runs ${team.members.length} agents; name one with --agent ID: ${listed()}\n`);
    return undefined;
  }
  const found = team.members.find((m) => agentMatches(m, agent));
  if (!found) process.stderr.write(`${file}: no agent of this config is ${agent}; its agents: ${listed()}\n`);
  return found;
}

/** `wanted` names the agent: its team id, npub or hex pubkey. */
function agentMatches(m: LoadedConfig, wanted: string): boolean {
  const w = wanted.trim().toLowerCase();
  return w === agentId(m.pubkey) || w === m.pubkey || w === nip19.npubEncode(m.pubkey);
}

/** A config of one agent; a config with `agents:` is refused here, saying which commands take it. */
export function loadConfigText(text: string, file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  return oneAgent(loadTeamText(text, file, env));
}

function oneAgent(team: LoadedTeam): LoadedConfig {
  const [first] = team.members;
  if (team.members.length === 1 && !first!.team) return first!;
  throw new ConfigError([
    {
      file: team.file,
      line: team.agentsAt.line,
      col: team.agentsAt.col,
      path: "agents",
      message: `this config runs ${team.members.length} agent${team.members.length === 1 ? "" : "s"} in one daemon (agents:); \`run\`, \`check\`, \`doctor\` and \`tail --agent ID\` take it, this command takes the config of one agent`,
    },
  ]);
}

/** Any config as a team: a config without `agents:` is a team of its one agent (`members[0].team` unset). */
export function loadTeam(file: string, env: NodeJS.ProcessEnv = process.env): LoadedTeam {
  const text = readConfigFile(file);
  // Whoever can change the config can change the agent command: only this user or root may.
  const trust = checkTrust(file, "config file");
  if (trust.refused) throw new ConfigError([{ file, line: 1, col: 1, path: "", message: trust.refused }]);
  const team = loadTeamText(text, file, env);
  for (const m of team.members) m.warnings.push(...trust.warnings.map((w) => `${file}: ${w}`));
  return team;
}

export interface LoadedTeam {
  file: string;
  /** The daemon's state directory: the one agent's, or the team's (each agent's is `agents/<id>` in it). */
  stateDir: string;
  members: LoadedConfig[];
  /** Where `agents:` is written (for messages about the team as a whole). */
  agentsAt: { line: number; col: number };
}

/** The team's config warnings, each once: a shared key's warning is every agent's. */
export const teamWarnings = (team: LoadedTeam): string[] => [...new Set(team.members.flatMap((m) => m.warnings))];

/** The YAML document of `text`, or its syntax errors thrown as problems; `at` adds a problem at a node. */
function parseYaml(text: string, file: string) {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  const problems: ConfigProblem[] = [];
  const at = (offset: number | undefined, path: PathPart[], message: string) => {
    const pos = lc.linePos(offset ?? 0);
    problems.push({ file, line: pos.line, col: pos.col, path: formatPath(path), message });
  };

  for (const p of explainYamlErrors(text, doc.errors, (o) => lc.linePos(o))) problems.push({ file, path: "", ...p });
  for (const e of doc.warnings) at(e.pos[0], [], e.message.split("\n")[0]!);
  if (doc.errors.length) throw new ConfigError(sortProblems(problems));
  return { doc, lc, problems, at };
}

/**
 * A YAML file holding one section of the config (the proxy's `--manifest` is an `mcp`
 * section), checked with that section's schema; problems are reported as the config's are.
 */
export function loadSectionText<S extends z.ZodType>(text: string, file: string, schema: S): z.output<S> {
  const { doc, problems, at } = parseYaml(text, file);
  const result = schema.safeParse(doc.toJS() ?? {});
  if (!result.success) {
    for (const issue of result.error.issues) locateIssue(doc, issue, at);
    throw new ConfigError(sortProblems(withMissingColons(problems, text, file)));
  }
  return result.data;
}

export function loadTeamText(text: string, file: string, env: NodeJS.ProcessEnv = process.env): LoadedTeam {
  const { doc, lc, problems, at } = parseYaml(text, file);
  interpolate(doc, env, at);
  const agentsNode = doc.get("agents", true);
  if (agentsNode === undefined) {
    const capped = doc.getIn(["team", "max_concurrent"], true) as Node | undefined;
    if (capped)
      at(
        capped.range?.[0],
        ["team", "max_concurrent"],
        "team.max_concurrent caps the agents of a team (agents:) together; this config runs one agent: set agent.max_concurrent instead",
      );
    const one = validate(doc, lc, text, file, env, formatPath, problems);
    return { file, stateDir: one.config.state_dir, members: [one], agentsAt: { line: 1, col: 1 } };
  }
  if (problems.length) throw new ConfigError(sortProblems(problems));
  return loadMembers(doc, lc, text, file, env, agentsNode as Node);
}

/** Each entry of `agents:` over the shared keys, then what only a team can get wrong. */
function loadMembers(doc: Document, lc: LineCounter, text: string, file: string, env: NodeJS.ProcessEnv, agentsNode: Node): LoadedTeam {
  const agentsKey = isMap(doc.contents) ? doc.contents.items.find((p) => isScalar(p.key) && p.key.value === "agents")?.key : undefined;
  const agentsPos = lc.linePos((agentsKey as Node | undefined)?.range?.[0] ?? 0);
  const problem = (offset: number | undefined, path: string, message: string): ConfigProblem => {
    const pos = lc.linePos(offset ?? 0);
    return { file, line: pos.line, col: pos.col, path, message };
  };
  if (!isSeq(agentsNode) || agentsNode.items.length === 0 || !agentsNode.items.every(isMap))
    throw new ConfigError([
      problem(
        agentsNode.range?.[0],
        "agents",
        'agents must be a list of mappings, one per agent (each with at least its identity); see docs/configuration.md "Several agents in one daemon"',
      ),
    ]);
  const problems: ConfigProblem[] = [];
  for (const [i, entry] of agentsNode.items.entries())
    for (const pair of (entry as YAMLMap).items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : "";
      if ((DAEMON_KEYS as readonly string[]).includes(key))
        problems.push(
          problem(
            (pair.key as Node).range?.[0],
            `agents[${i}].${key}`,
            `${key} belongs to the daemon, which has one for all its agents: set it at the top level (each agent's state is kept in its own directory under state_dir/agents)`,
          ),
        );
    }
  if (problems.length) throw new ConfigError(sortProblems(problems));

  const teamStateDir = resolvePaths(
    { state_dir: doc.get("state_dir") as string | undefined, relay: {}, identity: {}, agent: {}, mcp: { servers: {} } },
    file,
    env,
  ).state_dir;
  const members: LoadedConfig[] = [];
  const seen = new Set<string>();
  for (const [i, entry] of agentsNode.items.entries()) {
    const [start, , end] = (entry as Node).range ?? [0, 0, 0];
    const label = (path: PathPart[]) => {
      const shown = formatPath(path);
      return {
        inEntry: `agents[${i}]${shown && !shown.startsWith("[") ? "." : ""}${shown}`,
        shared: `${shown} (for agents[${i}], which takes it from the shared keys)`,
      };
    };
    const member = memberDocument(doc, i);
    try {
      const loaded = validate(member, lc, text, file, env, (path, offset) =>
        offset !== undefined && offset >= start && offset < end ? label(path).inEntry : label(path).shared,
      );
      const id = agentId(loaded.pubkey);
      const stateDir = join(teamStateDir, "agents", id);
      loaded.config.state_dir = stateDir;
      if (!member.hasIn(["agent", "cwd"])) loaded.config.agent.cwd = join(stateDir, "work", "{channel}");
      loaded.team = { id, index: i, stateDir: teamStateDir, hide: [], exposed: [] };
      members.push(loaded);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      // A problem in a shared key is the same for every agent that takes it: said once.
      for (const p of err.problems) {
        const key = `${p.line}:${p.col}:${p.message}`;
        if (!seen.has(key)) problems.push(p);
        seen.add(key);
      }
    }
  }
  if (problems.length) throw new ConfigError(sortProblems(problems));
  for (const m of members) m.team!.hide = teamPaths(m, members);
  for (const m of members) unsandboxedInTeam(m, members, doc, problem, problems);
  if (problems.length) throw new ConfigError(sortProblems(problems));
  const views: MemberView[] = members.map((m) => memberView(m));
  for (const p of [...sharedByTwo(views), ...doubleAnswers(views)]) {
    const entry = agentsNode.items[p.entry] as Node;
    const node = doc.getIn(["agents", p.entry, ...p.path], true) as Node | undefined;
    problems.push(problem(node?.range?.[0] ?? entry.range?.[0], `agents[${p.entry}]`, p.message));
  }
  if (problems.length) throw new ConfigError(sortProblems(problems));
  return { file, stateDir: teamStateDir, members, agentsAt: { line: agentsPos.line, col: agentsPos.col } };
}

/**
 * An entry with `agent.sandbox: off` in a team runs its agent as the daemon's user, beside
 * every other identity's key: a config error, unless the operator said so with
 * `team.allow_unsandboxed: true` — then a warning at every start (check and run) names what
 * that agent can read (docs/security.md).
 */
function unsandboxedInTeam(
  m: LoadedConfig,
  members: LoadedConfig[],
  doc: Document,
  problem: (offset: number | undefined, path: string, message: string) => ConfigProblem,
  problems: ConfigProblem[],
): void {
  if (members.length < 2) return;
  const i = m.team!.index;
  const others = members.filter((o) => o !== m);
  const keys = others.map((o) =>
    o.config.identity.secret_key_file
      ? `agents[${o.team!.index}]'s key file ${o.config.identity.secret_key_file}`
      : `agents[${o.team!.index}]'s key (written in ${m.file})`,
  );
  const readable = [...keys, `the config ${m.file}`, `the team's state directory ${m.team!.stateDir} (every agent's queue.db)`];
  // `auto` finds out only at start whether bubblewrap works here (agent/sandbox-plan.ts).
  m.team!.exposed = readable;
  if (m.config.agent.sandbox !== "off") return;
  if (m.config.team?.allow_unsandboxed) {
    m.warnings.push(
      `${m.file}: agents[${i}] runs unsandboxed (agent.sandbox: off, team.allow_unsandboxed: true): its agent can read ${readable.join(", ")}`,
    );
    return;
  }
  const node = (doc.getIn(["agents", i, "agent", "sandbox"], true) ?? doc.getIn(["agent", "sandbox"], true)) as Node | undefined;
  problems.push(
    problem(
      node?.range?.[0],
      `agents[${i}].agent.sandbox`,
      `off in a team lets this agent read ${readable.join(", ")}: use bubblewrap or auto, or run it as a daemon of its own; to accept that, set team.allow_unsandboxed: true`,
    ),
  );
}

/** What of the team an agent's sandbox hides: the daemon's state directory and the other agents' files. */
function teamPaths(me: LoadedConfig, members: LoadedConfig[]): Array<{ label: string; path: string }> {
  const out = [{ label: "the team's state directory", path: me.team!.stateDir }];
  for (const other of members) {
    if (other === me) continue;
    const c = other.config;
    const whose = `agents[${other.team!.index}]'s`;
    if (c.identity.secret_key_file) out.push({ label: `${whose} key file`, path: c.identity.secret_key_file });
    if (c.identity.auth_tag_file)
      out.push({ label: `${whose} auth tag file`, path: resolve(dirname(other.file), c.identity.auth_tag_file) });
    const root = c.agent.cwd.split("{channel}")[0]!.replace(/\/+$/, "");
    if (root && !root.startsWith(me.team!.stateDir)) out.push({ label: `${whose} working directories`, path: root });
  }
  return out;
}

/** What the team checks need of one agent's loaded config. */
function memberView(m: LoadedConfig): MemberView {
  const c = m.config;
  const rule = (id: string) => {
    const p = policyFor(c, id);
    return { id, answersUnmentioned: p.respond_to !== "nobody" && (!p.require_mention || p.participation === "channel") };
  };
  const listed = c.channels.filter((ch) => ch.id !== "*").map((ch) => rule(ch.id));
  const every = c.channels.some((ch) => ch.id === "*") ? { answersUnmentioned: rule("*").answersUnmentioned } : undefined;
  return { label: `agents[${m.team!.index}]`, pubkey: m.pubkey, cwd: c.agent.cwd, channels: listed, everyChannel: every };
}

/**
 * One agent's document checked whole: the schema, the keys that span keys, the secret key,
 * the attestation, the files it names. `label` says where a problem at `path` is written.
 */
function validate(
  doc: Document,
  lc: LineCounter,
  text: string,
  file: string,
  env: NodeJS.ProcessEnv,
  label: (path: PathPart[], offset: number | undefined) => string,
  problems: ConfigProblem[] = [],
): LoadedConfig {
  const at = (offset: number | undefined, path: PathPart[], message: string) => {
    const pos = lc.linePos(offset ?? 0);
    problems.push({ file, line: pos.line, col: pos.col, path: label(path, offset), message });
  };
  const raw = doc.toJS() ?? {};
  const result = configSchema.safeParse(raw);
  for (const issue of crossCheck(raw)) {
    const path = [...issue.path];
    while (path.length && !nodeAt(doc, path)) path.pop();
    at(nodeAt(doc, path)?.range?.[0], issue.path, issue.message);
  }
  if (!result.success) {
    for (const issue of result.error.issues) locateIssue(doc, issue, at);
  }
  if (problems.length || !result.success) throw new ConfigError(sortProblems(withMissingColons(problems, text, file)));

  // Relative paths are relative to the config file's directory (./paths.ts), these too.
  const config: Config = resolvePaths(result.data, file, env);
  const baseDir = dirname(resolve(file));
  const warnings: string[] = [];
  const warn = (path: PathPart[], message: string) => {
    const node = nodeAt(doc, path);
    const pos = lc.linePos(node?.range?.[0] ?? 0);
    warnings.push(formatProblem({ file, line: pos.line, col: pos.col, path: label(path, node?.range?.[0]), message }));
  };

  let secretKey: Uint8Array | undefined;
  if (config.identity.secret_key !== undefined) {
    try {
      secretKey = parseSecretKey(config.identity.secret_key);
    } catch (err) {
      at(nodeAt(doc, ["identity", "secret_key"])?.range?.[0], ["identity", "secret_key"], (err as Error).message);
    }
    config.identity.secret_key = "[redacted]";
  } else if (config.identity.secret_key_file !== undefined) {
    const keyFile = config.identity.secret_key_file;
    const where = nodeAt(doc, ["identity", "secret_key_file"])?.range?.[0];
    try {
      const read = readSecretFile(keyFile);
      secretKey = read.key;
      for (const w of read.warnings) warn(["identity", "secret_key_file"], w);
    } catch (err) {
      at(where, ["identity", "secret_key_file"], `${(err as Error).message}${credentialsHint(err, env)}`);
    }
  }

  if (config.defaults.respond_to === "allowlist" && config.defaults.allow.length === 0) {
    warn(["defaults", "allow"], "respond_to is allowlist but allow is empty: only the owner will be answered");
  }
  config.channels.forEach((ch, i) => {
    const mode = ch.respond_to ?? config.defaults.respond_to;
    const allow = ch.allow ?? config.defaults.allow;
    if (mode === "allowlist" && allow.length === 0 && ch.respond_to !== undefined) {
      warn(["channels", i, "respond_to"], "respond_to is allowlist but allow is empty: only the owner will be answered");
    }
  });
  for (const p of policyLockProblems(config))
    at(nodeAt(doc, p.path)?.range?.[0] ?? nodeAt(doc, [p.path[0]!])?.range?.[0], p.path, p.message);
  let authTag: string[] | undefined;
  if (secretKey) {
    const att = resolveAttestation(config.identity, baseDir, pubkeyOf(secretKey));
    if (!att.ok) at(nodeAt(doc, ["identity", att.key])?.range?.[0], ["identity", att.key], att.problem);
    else if (att.owner) {
      if (att.warning) warn(["identity", "owner"], att.warning);
      config.identity.owner = att.owner;
      authTag = att.tag;
    }
  }
  if (config.heartbeat?.prompt_file !== undefined) {
    const file = resolve(baseDir, config.heartbeat.prompt_file);
    try {
      config.heartbeat.prompt = readFileSync(file, "utf8").trim();
      if (!config.heartbeat.prompt)
        at(nodeAt(doc, ["heartbeat", "prompt_file"])?.range?.[0], ["heartbeat", "prompt_file"], `heartbeat prompt file ${file} is empty`);
    } catch (err) {
      at(
        nodeAt(doc, ["heartbeat", "prompt_file"])?.range?.[0],
        ["heartbeat", "prompt_file"],
        `cannot read heartbeat prompt file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    config.heartbeat.prompt_file = file;
  }
  if (secretKey && config.identity.owner === pubkeyOf(secretKey)) {
    const keyFrom = config.identity.secret_key_file !== undefined ? "identity.secret_key_file" : "identity.secret_key";
    at(
      nodeAt(doc, ["identity", "owner"])?.range?.[0],
      ["identity", "owner"],
      `the owner is the agent's own key (${nip19.npubEncode(config.identity.owner)}, from ${keyFrom}): the agent never answers itself, so it would answer nobody; set identity.owner to your own npub`,
    );
  }
  if (!config.identity.owner) warn(["identity"], "no owner set: owner-only channels answer nobody and control commands are disabled");
  const deadline = hookDeadlineProblem(config);
  if (deadline)
    at(
      nodeAt(doc, ["mcp", "hook_deadline"])?.range?.[0] ?? nodeAt(doc, ["gates", "enforce"])?.range?.[0],
      ["mcp", "hook_deadline"],
      deadline,
    );
  for (const name of Object.keys(config.mcp.servers)) {
    const held = holdRepliesProblem(config, name);
    if (held) at(nodeAt(doc, ["mcp", "servers", name, "hold_replies"])?.range?.[0], ["mcp", "servers", name, "hold_replies"], held);
  }

  if (problems.length || !secretKey) throw new ConfigError(sortProblems(problems));

  config.agent.sandbox_binds.forEach((b, i) => {
    b.path = resolve(baseDir, b.path);
    if (!existsSync(b.path)) {
      at(
        nodeAt(doc, ["agent", "sandbox_binds", i, "path"])?.range?.[0],
        ["agent", "sandbox_binds", i, "path"],
        `${b.path} does not exist; create it, or remove this bind`,
      );
    }
  });
  if (problems.length) throw new ConfigError(sortProblems(problems));

  return { file, config, secretKey, pubkey: pubkeyOf(secretKey), warnings, authTag };
}

/**
 * A key file this user may not read, outside a service: under the systemd unit the key
 * reaches the service as a credential (LoadCredential=, `$CREDENTIALS_DIRECTORY`), which
 * exists only inside the service, so a person running `doctor` or `check` by hand as the
 * service user meets the root-owned original instead.
 */
function credentialsHint(err: unknown, env: NodeJS.ProcessEnv): string {
  if (!/\bEACCES\b/.test((err as Error).message) || env.CREDENTIALS_DIRECTORY) return "";
  return "; this user cannot read it. Under the systemd unit the key reaches the service through LoadCredential= as $CREDENTIALS_DIRECTORY/agent.nsec, which exists only inside the service: run this command as root, which reads the key where systemd does (docs/operating.md)";
}

/**
 * Reads a key file, refusing one that group or others can read (it holds the agent's
 * identity), or that another user could change (file-trust.ts).
 */
function readSecretFile(path: string): { key: Uint8Array; warnings: string[] } {
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch (err) {
    throw new KeyError(`cannot read secret key file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (mode & 0o077) {
    throw new KeyError(
      `secret key file ${path} has mode ${mode.toString(8).padStart(4, "0")}; it must not be group/world readable (chmod 600 ${path})`,
    );
  }
  const trust = checkTrust(path, "secret key file");
  if (trust.refused) throw new KeyError(trust.refused);
  try {
    return { key: parseSecretKey(readFileSync(path, "utf8")), warnings: trust.warnings };
  } catch (err) {
    throw new KeyError(`secret key file ${path}: ${(err as Error).message}`);
  }
}

function interpolate(doc: Document, env: NodeJS.ProcessEnv, at: (offset: number | undefined, path: PathPart[], msg: string) => void) {
  visit(doc, {
    Scalar(_key, node, ancestry) {
      if (typeof node.value !== "string" || !node.value.includes("${")) return;
      const path = pathOf(ancestry, node);
      node.value = node.value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
        const v = env[name];
        if (fallback !== undefined && (v === undefined || v === "")) return fallback;
        if (v === undefined) {
          const hint =
            formatPath(path) === "identity.secret_key"
              ? "; set it to the agent's nsec (buzz-bridge keygen makes one) or use identity.secret_key_file instead"
              : "";
          at(node.range?.[0], path, `environment variable ${name} is not set${hint}`);
          return "";
        }
        return v;
      });
    },
  });
}

/** Reconstructs the key path of a node from the visitor's ancestry. */
function pathOf(ancestry: readonly unknown[], node: unknown): PathPart[] {
  const path: PathPart[] = [];
  const chain = [...ancestry, node];
  for (let i = 1; i < chain.length; i++) {
    const parent = chain[i - 1];
    const child = chain[i];
    if (isPair(parent) && isScalar(parent.key)) {
      if (child === parent.value) path.push(String(parent.key.value));
    } else if (isSeq(parent)) {
      path.push(parent.items.indexOf(child as never));
    }
  }
  return path;
}

function nodeAt(doc: Document, path: PathPart[]): Node | undefined {
  if (path.length === 0) return doc.contents ?? undefined;
  const n = doc.getIn(path, true);
  return n && typeof n === "object" ? (n as Node) : undefined;
}

/** Puts a zod issue at the deepest node of its path that exists in the file. */
function locateIssue(doc: Document, issue: z.core.$ZodIssue, at: (offset: number | undefined, path: PathPart[], msg: string) => void) {
  const path = issue.path.filter((p): p is PathPart => typeof p !== "symbol");
  if (issue.code === "unrecognized_keys") {
    const parent = nodeAt(doc, path);
    for (const key of issue.keys) {
      let offset = parent?.range?.[0];
      if (isMap(parent)) {
        const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === key);
        if (pair && isScalar(pair.key)) offset = pair.key.range?.[0];
      }
      at(offset, [...path, key], `unknown key '${key}'`);
    }
    return;
  }
  if (issue.code === "invalid_key") {
    // A record key that fails its own rule: say which key and why, not zod's "Invalid key in record".
    const key = path.at(-1);
    const why = issue.issues.map((i) => i.message).join("; ");
    const parent = nodeAt(doc, path.slice(0, -1));
    let offset = nodeAt(doc, path)?.range?.[0];
    if (isMap(parent)) {
      const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === key);
      if (pair && isScalar(pair.key)) offset = pair.key.range?.[0];
    }
    at(offset, path, `bad name '${String(key)}': ${why}`);
    return;
  }
  let depth = path.length;
  while (depth > 0 && !nodeAt(doc, path.slice(0, depth))) depth--;
  const missing = depth < path.length;
  const message =
    missing && issue.code === "invalid_type" && issue.message.includes("undefined") ? "required key is missing" : issue.message;
  at(nodeAt(doc, path.slice(0, depth))?.range?.[0], path, message);
}

/**
 * A key written without its colon alone in its mapping parses as that mapping's text
 * ("expected object, received string" at the line): said as the missing colon instead.
 */
function withMissingColons(problems: ConfigProblem[], text: string, file: string): ConfigProblem[] {
  const colonless = missingColons(text).filter((c) => problems.some((p) => p.line === c.line));
  if (!colonless.length) return problems;
  const lines = new Set(colonless.map((c) => c.line));
  return [...problems.filter((p) => !lines.has(p.line)), ...colonless.map((c) => ({ file, path: "", ...c }))];
}

function formatPath(path: PathPart[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");
}

function sortProblems(p: ConfigProblem[]): ConfigProblem[] {
  return [...p].sort((a, b) => a.line - b.line || a.col - b.col);
}
