/**
 * `buzz-bridge doctor`'s checks (README.md "Commands"): a live self-check that starts the real
 * parts the daemon would start — relay connection, NIP-42 auth, channel discovery, the
 * agent's ACP handshake, every MCP server — and says for each what is wrong in words a
 * person can act on. Each check is bounded in time, cleans up after itself, and never
 * throws: a failure is a result. Checks that depend on a failed one are skipped. What a
 * part found comes back from it as a value (the relay probe's result, a server's failure,
 * the catalog's naming notes), never read back from its log lines.
 */
import WebSocket from "ws";
import { AgentSandbox, agentEnvironment, poolOptionsFromConfig, probeAgent } from "../../agent/index.js";
import { npub } from "../../config/keys.js";
import type { LoadedConfig } from "../../config/load.js";
import { channelSelected, policyFor, type Config } from "../../config/schema.js";
import { startDevRelay, type DevRelay } from "../../devrelay/index.js";
import { BUZZ_TOOLS } from "../../contract/buzz-tool-schemas.js";
import { buildCatalog } from "../../proxy/catalog.js";
import { Downstream } from "../../proxy/downstream.js";
import { manifestFromConfig } from "../../contract/manifest.js";
import { AGENT_PREFIX, MAX_QUALIFIED_NAME } from "../../proxy/naming.js";
import { probeRelay, RelayAuthError, RelayClient } from "../../relay/index.js";
import { ChannelDirectory, type ChannelInfo } from "../../buzz/index.js";
import { initCrypto } from "../../nostr/verify.js";
import { agentDisplay, resolveAgentCommand } from "../../config/agent-command.js";
import { refusalAdvice } from "../../relay/auth-advice.js";
import { agentCommandProblem, agentCwdBase, agentCwdProblem, stateDirProblem } from "../daemon/preflight.js";
import { StateLock } from "../daemon/state-lock.js";
import { SCHEMA_VERSION, SqliteStore } from "../../queue/sqlite-store.js";
import { silentLogger } from "../../base/log.js";
import { cliPath } from "../../base/cli-path.js";
import { sandboxFor } from "../../agent/sandbox-config.js";
import type { ChildSpec } from "../../proxy/line-transport.js";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stateChecks } from "./doctor-state.js";
import { describeProcess, type StateDirSource } from "./doctor-service.js";
import { existsSync } from "node:fs";
import { sandboxCheck } from "./doctor-sandbox.js";
import { presetChecks, throwawayHome } from "./doctor-preset.js";
import type { CheckResult, Mark } from "./doctor-result.js";
import { relayInfoCheck } from "./doctor-relay-info.js";
import { mentionableCheck } from "./doctor-mentionable.js";

export interface DoctorOptions {
  /** Bound per check; default 15 s. */
  timeoutMs?: number;
  /** Where the state directory came from, when not from the config or `$STATE_DIRECTORY`. */
  stateFrom?: StateDirSource;
}

const DEFAULT_CHECK_TIMEOUT_MS = 15_000;

/** Runs every check against the loaded config. Relay checks and agent/MCP checks run side by side. */
export async function runDoctor(loaded: LoadedConfig, opts: DoctorOptions = {}): Promise<CheckResult[]> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  const cfg = loaded.config;
  const configCheck: CheckResult = {
    name: "config",
    mark: "ok",
    summary: `${loaded.file} is valid; agent identity ${npub(loaded.pubkey)}`,
    details: loaded.warnings.map((w) => `warning: ${w}`),
  };
  const [relay, mcp, agent, sandbox, fleet, preset] = await Promise.all([
    relayChecks(loaded, timeoutMs),
    mcpChecks(loaded, timeoutMs),
    agentCheck(loaded, timeoutMs),
    sandboxCheck(loaded, timeoutMs),
    stateChecks(loaded, timeoutMs),
    presetChecks(loaded, timeoutMs),
  ]);
  const state = stateCheck(cfg.state_dir, opts.stateFrom);
  const queue = state.mark === "ok" ? queueCheck(cfg.state_dir) : skipped("queue", "state");
  return [configCheck, state, queue, ...fleet, ...relay, agent, ...preset, workDirCheck(cfg.agent.cwd), sandbox, ...mcp];
}

// ---------------------------------------------------------------------------------------
// state_dir writable by this user, and whether a daemon holds it

function stateCheck(dir: string, from?: StateDirSource): CheckResult {
  const details = from
    ? [
        "flag" in from
          ? "state_dir from --state-dir"
          : `state_dir from ${from.unit} (StateDirectory=${from.stateDirectory}), the directory systemd gives the service`,
      ]
    : [];
  const problem = stateDirProblem(dir);
  if (problem) return { name: "state", mark: "fail", summary: problem, details };
  if (!existsSync(dir))
    // Nothing is created here: doctor may run as another user than the daemon (root, say).
    return { name: "state", mark: "ok", summary: `${dir} does not exist yet; \`run\` creates it (its parent is writable)`, details };
  const lock = StateLock.probe(dir);
  if (lock.state === "held") {
    // A running daemon is normal when doctor checks a live service; a second `run` is what would fail.
    return {
      name: "state",
      mark: "ok",
      summary: `${dir} is writable and in use by a running daemon${lock.pid ? ` (${describeProcess(lock.pid)})` : ""}; a second \`run\` on it would exit 2`,
      details,
    };
  }
  if (lock.state === "unknown") return { name: "state", mark: "fail", summary: `cannot read the lock in ${dir}: ${lock.error}`, details };
  return { name: "state", mark: "ok", summary: `${dir} is writable; no daemon is using it`, details };
}

/** The queue file: readable, of a schema this code understands, and intact (SQLite's quick_check). */
function queueCheck(dir: string): CheckResult {
  const r = SqliteStore.inspect(dir);
  switch (r.state) {
    case "absent":
      return { name: "queue", mark: "ok", summary: `no queue yet; the daemon creates ${r.file}` };
    case "intact":
      return {
        name: "queue",
        mark: "ok",
        summary: `${r.file} is intact (PRAGMA quick_check): ${r.waiting} mention${r.waiting === 1 ? "" : "s"} waiting, ${r.open} turn${r.open === 1 ? "" : "s"} open`,
      };
    case "newer":
      return {
        name: "queue",
        mark: "fail",
        summary: `${r.file} was written by a newer buzz-bridge (schema version ${r.version}; this one understands up to ${SCHEMA_VERSION}): upgrade buzz-bridge`,
      };
    case "damaged":
      return {
        name: "queue",
        mark: "fail",
        summary:
          `${r.file} is damaged (${r.problem}): restore it from a backup, or stop the daemon and move queue.db, ` +
          "queue.db-wal and queue.db-shm aside; it then starts with an empty queue (mentions it had accepted and not answered are lost)",
      };
    case "unreadable":
      return { name: "queue", mark: "fail", summary: `cannot read ${r.file}: ${r.error}` };
  }
}

function workDirCheck(template: string): CheckResult {
  const problem = agentCwdProblem(template);
  if (problem) return { name: "agent cwd", mark: "fail", summary: problem };
  return { name: "agent cwd", mark: "ok", summary: `${agentCwdBase(template)} is writable (agent.cwd ${template})` };
}

// ---------------------------------------------------------------------------------------
// relay: reachable → NIP-42 accepted → channels

async function relayChecks(loaded: LoadedConfig, timeoutMs: number): Promise<CheckResult[]> {
  const cfg = loaded.config;
  let dev: DevRelay | undefined;
  let url = cfg.relay.url;
  const out: CheckResult[] = [];
  try {
    if (url === "embedded") {
      // As the daemon does: an in-process dev relay where this identity is a relay member.
      try {
        dev = await startDevRelay({ port: 0, seed: cfg.relay.seed });
        dev.addRelayMember(loaded.pubkey);
        url = dev.url;
      } catch (err) {
        out.push({ name: "relay", mark: "fail", summary: `could not start the embedded development relay: ${message(err)}` });
        return [...out, skipped("auth", "relay"), skipped("channels", "relay")];
      }
    }

    const reach = await bounded(timeoutMs, `connecting to ${url}`, () => connectOnce(url, timeoutMs));
    if (!reach.ok) {
      out.push({ name: "relay", mark: "fail", summary: reach.error });
      return [...out, skipped("auth", "relay"), skipped("channels", "relay")];
    }
    out.push({ name: "relay", mark: "ok", summary: `${dev ? "embedded development relay at " : ""}${url} reachable (${reach.value} ms)` });
    out.push(await relayInfoCheck(url, cfg, timeoutMs));

    const auth = await bounded(timeoutMs, `NIP-42 auth at ${url}`, () => probeRelay(url, loaded.secretKey, { timeoutMs }));
    if (!auth.ok) {
      out.push({ name: "auth", mark: "fail", summary: authAdvice(auth.cause, auth.error, loaded.pubkey) });
      return [...out, skipped("channels", "auth")];
    }
    if (auth.value.unchallenged) {
      // The daemon carries on unauthenticated there, but a Buzz relay always challenges.
      out.push({
        name: "auth",
        mark: "ok",
        summary: `the relay sent no NIP-42 challenge; continuing unauthenticated (is ${url} a Buzz relay?)`,
      });
    } else {
      out.push({ name: "auth", mark: "ok", summary: `NIP-42 auth accepted for ${npub(loaded.pubkey)} (${auth.value.ms} ms)` });
    }

    const found = await bounded(timeoutMs, `channel discovery at ${url}`, () => discoverChannels(url, loaded.secretKey, timeoutMs));
    if (!found.ok) {
      out.push({ name: "channels", mark: "fail", summary: `could not list channels: ${found.error}` });
      return out;
    }
    out.push(channelsResult(cfg, found.value, loaded.pubkey));
    const reader = new RelayClient({ url, secretKey: loaded.secretKey, http: { attempts: 2, timeoutMs } });
    const m = await bounded(timeoutMs, `reading the agent's records at ${url}`, () => mentionableCheck(reader, loaded, found.value));
    out.push(m.ok ? m.value : { name: "mentionable", mark: "ok", summary: `could not read the records Desktop reads: ${m.error}` });
    return out;
  } finally {
    await dev?.close().catch(() => undefined);
  }
}

/** One WebSocket handshake, to tell "nothing listens there" apart from an auth refusal. */
function connectOnce(url: string, timeoutMs: number): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const t0 = Date.now();
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, { handshakeTimeout: timeoutMs });
    } catch (err) {
      reject(new Error(`cannot connect to ${url}: ${message(err)}; check relay.url`));
      return;
    }
    ws.once("open", () => {
      ws.terminate();
      resolvePromise(Date.now() - t0);
    });
    ws.once("unexpected-response", (_req, res) => {
      ws.terminate();
      reject(
        new Error(
          `cannot connect to ${url}: the server answered HTTP ${res.statusCode} instead of a WebSocket upgrade; is relay.url the relay's WebSocket address?`,
        ),
      );
    });
    ws.once("error", (err: NodeJS.ErrnoException) => {
      ws.terminate();
      reject(new Error(connectAdvice(url, err)));
    });
  });
}

function connectAdvice(url: string, err: NodeJS.ErrnoException): string {
  const code = err.code ?? "";
  const head = `cannot connect to ${url}: ${code || err.message}`;
  switch (code) {
    case "ECONNREFUSED":
      return `${head} (nothing listens there; check relay.url and that the relay is running)`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `${head} (the host name does not resolve; check relay.url)`;
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `${head} (no route to the relay; check relay.url, the network and firewalls)`;
    default:
      if (/certificate|CERT|SSL|TLS/i.test(`${code} ${err.message}`))
        return `${head} (${err.message}; the relay's TLS certificate is not trusted here — set NODE_EXTRA_CA_CERTS for a private CA)`;
      if (/handshake timed out|timed out/i.test(err.message))
        return `cannot connect to ${url}: no WebSocket handshake in time (relay overloaded, or a proxy in between?)`;
      return code ? `${head} (${err.message})` : head;
  }
}

/** The relay's own reason, plus what to do about it. */
function authAdvice(cause: unknown, fallback: string, pubkey: string): string {
  if (!(cause instanceof RelayAuthError)) return fallback;
  return refusalAdvice(cause.reason, pubkey);
}

async function discoverChannels(url: string, secretKey: Uint8Array, timeoutMs: number): Promise<ChannelInfo[]> {
  await initCrypto();
  // Discovery is NIP-98 HTTP only; no WebSocket subscription needed.
  const client = new RelayClient({ url, secretKey, http: { attempts: 2, timeoutMs } });
  return new ChannelDirectory(client).discover();
}

function channelsResult(cfg: Config, all: ChannelInfo[], pubkey: string): CheckResult {
  const selected = all.filter((c) => channelSelected(cfg, c.id));
  const details = selected.map((c) => `#${c.name} (${c.type}, ${c.id})${c.about ? ` — ${c.about}` : " — no description"}`);
  const missing = cfg.channels.filter((e) => e.id !== "*" && !all.some((c) => c.id === e.id)).map((e) => e.id);
  for (const id of missing) details.push(`✗ channels: ${id} is configured but ${npub(pubkey)} is not a member of it`);
  if (all.length === 0) {
    return {
      name: "channels",
      mark: "fail",
      summary: `${npub(pubkey)} is not a member of any channel: ask a channel admin to add it`,
      details,
    };
  }
  if (selected.length === 0) {
    return {
      name: "channels",
      mark: "fail",
      details,
      summary: `member of ${all.length} channel${all.length === 1 ? "" : "s"} (${all.map((c) => `#${c.name}`).join(", ")}) but the config's channels select none of them`,
    };
  }
  const listening = `listening in ${selected.length} channel${selected.length === 1 ? "" : "s"}`;
  if (missing.length)
    return {
      name: "channels",
      mark: "fail",
      summary: `${listening}; ${missing.length} configured channel${missing.length === 1 ? " is" : "s are"} not joined`,
      details,
    };
  return { name: "channels", mark: "ok", summary: listening, details };
}

// ---------------------------------------------------------------------------------------
// agent: command on PATH → ACP initialize → agent.mode offered

async function agentCheck(loaded: LoadedConfig, timeoutMs: number): Promise<CheckResult> {
  const cfg = loaded.config.agent;
  const po = poolOptionsFromConfig({ ...cfg, ...resolveAgentCommand(cfg) }, { secret: loaded.secretKey });
  const shown = agentDisplay(cfg);
  const env = agentEnvironment({ configured: cfg.env, secret: loaded.secretKey }).env;
  const missing = agentCommandProblem(po.command, env.PATH ?? process.env.PATH ?? "");
  if (missing) return { name: "agent", mark: "fail", summary: missing };
  const home = throwawayHome();
  const probe = await bounded(timeoutMs + 2000, `agent '${shown}'`, () =>
    probeAgent({
      command: po.command,
      args: po.args,
      env: { ...po.env, ...home.env },
      mode: po.mode,
      model: po.model,
      effort: po.effort,
      authMethod: po.authMethod,
      preset: po.preset,
      provider: po.provider,
      initTimeoutMs: timeoutMs,
      secret: loaded.secretKey,
    }),
  ).finally(() => home.dispose());
  if (!probe.ok) {
    const [first, ...rest] = probe.error.split("\n");
    return { name: "agent", mark: "fail", summary: first!, details: rest.filter((l) => l.trim() !== "") };
  }
  const p = probe.value;
  const who = p.agentInfo ? `${p.agentInfo.name}${p.agentInfo.version ? ` ${p.agentInfo.version}` : ""}` : "an unnamed agent";
  const mode = cfg.mode ? `; mode '${cfg.mode}' offered` : "";
  const list = (xs: string[]) => (xs.length ? xs.join(", ") : "none");
  // What the agent offers, so an operator can pick agent.mode / agent.model / agent.effort.
  const details = p.sessionError
    ? [`could not open a session to list its modes and models: ${p.sessionError.split("\n")[0]}`]
    : [`modes: ${list(p.offered.modes)}`, `models: ${list(p.offered.models)}`, `effort levels: ${list(p.offered.efforts)}`];
  return { name: "agent", mark: "ok", summary: `'${shown}' answered ACP initialize as ${who} (${p.initMs} ms)${mode}`, details };
}

// ---------------------------------------------------------------------------------------
// MCP servers: each starts and lists its tools; the proxy's names for them are valid

/**
 * Starts every MCP server the way a turn will: inside the agent sandbox (for a scratch
 * channel, with the default `agent.*` isolation), in the working directory the proxy would
 * give it, with the sandbox's HOME and network; so a server whose command or files the
 * sandbox hides fails here rather than at the first turn.
 */
async function mcpChecks(loaded: LoadedConfig, timeoutMs: number): Promise<CheckResult[]> {
  const cfg = loaded.config;
  const manifest = manifestFromConfig(cfg.mcp);
  const logger = silentLogger();
  const listTimeoutMs = Math.min(manifest.list_timeout, timeoutMs);
  let room: SandboxRoom | undefined;
  let outside: string | undefined;
  try {
    room = manifest.servers.length ? await sandboxRoom(loaded) : undefined;
  } catch (err) {
    // The sandbox check says why it does not start; the servers' own faults are still worth finding.
    outside = `started outside the agent sandbox, which does not start here (${message(err)})`;
  }
  const servers = manifest.servers.map(
    (s) => new Downstream(s, { logger, listTimeoutMs, events: { changed: () => undefined }, wrap: room?.wrap }),
  );
  try {
    await Promise.all(servers.map((ds) => bounded(timeoutMs + 1000, `MCP server '${ds.name}'`, () => ds.start())));
    const results = servers.map((ds) => serverResult(ds, room !== undefined));
    if (outside) for (const r of results) r.details = [...(r.details ?? []), outside];
    if (servers.length === 0)
      return [{ name: "tool names", mark: "ok", summary: "no MCP servers configured; only the built-in buzz tools are listed" }];
    const ready = servers.filter((ds) => ds.state === "ready");
    const broken = servers.filter((ds) => ds.state !== "ready").map((ds) => ds.name);
    if (ready.length === 0) return [...results, skipped("tool names", "MCP server")];
    const names = toolNamesResult(cfg, ready);
    if (broken.length) names.summary += ` (without ${broken.join(", ")}, which did not start)`;
    return [...results, names];
  } finally {
    await Promise.all(servers.map((ds) => ds.stop().catch(() => undefined)));
    room?.close();
  }
}

interface SandboxRoom {
  wrap: (spec: ChildSpec) => ChildSpec;
  close(): void;
}

/** The sandbox a turn's proxy (and so its servers) runs in, for a scratch channel; undefined when agents run unsandboxed. */
async function sandboxRoom(loaded: LoadedConfig): Promise<SandboxRoom | undefined> {
  const configured = sandboxFor(loaded);
  // A sandbox that cannot be had is the sandbox line's failure (doctor-sandbox.ts); the MCP check runs unsandboxed.
  if (!configured.attainable()?.sandboxed) return undefined;
  const scratch = mkdtempSync(join(tmpdir(), "buzz-bridge-doctor-mcp-"));
  // The sandbox's own files go to the scratch directory: doctor creates nothing in state_dir.
  const sandbox = new AgentSandbox({ ...configured.policy, stateDir: scratch }, undefined, () => configured.probe);
  const close = () => {
    sandbox.close();
    rmSync(scratch, { recursive: true, force: true });
  };
  try {
    const cwd = join(scratch, "cwd");
    const home = join(scratch, "home");
    mkdirSync(cwd);
    mkdirSync(home);
    await sandbox.start();
    const env = agentEnvironment({ configured: loaded.config.agent.env, secret: loaded.secretKey }).env;
    const launch = sandbox.launch({ channel: { id: "doctor-probe", name: "doctor-probe" }, cwd, home, env })!;
    const wrap = (spec: ChildSpec): ChildSpec => ({
      command: launch.command,
      args: [...launch.args, process.execPath, cliPath(), "sandbox-exec", "--cwd", spec.cwd ?? cwd, "--", spec.command, ...spec.args],
      env: { ...spec.env, ...launch.env },
      network: launch.network,
    });
    return { wrap, close };
  } catch (err) {
    close();
    throw err;
  }
}

function serverResult(ds: Downstream, sandboxed: boolean): CheckResult {
  const name = `mcp ${ds.name}`;
  if (ds.state === "ready") {
    const tools = ds.tools.map((t) => t.name);
    return {
      name,
      mark: "ok",
      summary: `started${sandboxed ? " in the agent sandbox" : ""} and listed ${tools.length} tool${tools.length === 1 ? "" : "s"}`,
      details: tools.length ? [tools.join(", ")] : [],
    };
  }
  const stderr = ds.lastFailureStderr !== undefined ? ds.lastFailureStderr.trim().split("\n").slice(-10) : [];
  let error = ds.lastError ?? (ds.state === "starting" ? "did not list its tools in time" : "failed to start");
  if (/Connection closed/i.test(error)) error = "exited before listing its tools";
  return {
    name,
    mark: "fail",
    summary: `'${[ds.cfg.command, ...ds.cfg.args].join(" ")}' failed${sandboxed ? " in the agent sandbox (as a turn would start it)" : ""}: ${error}`,
    details: stderr.length ? ["stderr (last lines):", ...stderr.map((l) => `  ${l}`)] : ["(no stderr output)"],
  };
}

/**
 * Builds the proxy's catalog for every distinct server set a channel can get, and reports
 * what the proxy would do about names: rename one that breaks the rules (too long with the
 * agent's `mcp__buzz__` prefix, `__`, odd characters), refuse a collision.
 */
function toolNamesResult(cfg: Config, ready: Downstream[]): CheckResult {
  const sets = new Map<string, string[]>();
  for (const entry of cfg.channels) {
    const names = policyFor(cfg, entry.id).mcp;
    sets.set([...names].sort().join(","), names);
  }
  const problems = new Set<string>();
  let count = 0;
  for (const names of sets.values()) {
    const catalog = buildCatalog(
      ready.filter((ds) => names.includes(ds.name)),
      BUZZ_TOOLS,
      silentLogger(),
    );
    count = Math.max(count, catalog.tools.length);
    if (catalog.collision) problems.add(catalog.collision.message);
    for (const n of catalog.notes) {
      if (n.kind === "renamed") {
        const original = ready.find((d) => d.name === n.server)?.cfg.prefix === false ? n.tool : `${n.server}_${n.tool}`;
        problems.add(
          `tool '${n.tool}' of '${n.server}' breaks the naming rules as '${original}' (${AGENT_PREFIX}${original} is ${AGENT_PREFIX.length + original.length} characters, limit ${MAX_QUALIFIED_NAME}; no '__'; letters, digits, _ and -); the proxy renames it '${n.as}' — shorten the server name or set prefix: false`,
        );
      } else if (n.kind === "hook_name_invalid") {
        problems.add(`hook '${n.tool}' of '${n.server}' is not a valid tool name and is ignored`);
      } else {
        problems.add(`more than ${n.limit} tools in one session; dropped: ${n.dropped.join(", ")}`);
      }
    }
  }
  if (problems.size)
    return {
      name: "tool names",
      mark: "fail",
      summary: `${problems.size} problem${problems.size === 1 ? "" : "s"} with the proxy's tool names`,
      details: [...problems],
    };
  return {
    name: "tool names",
    mark: "ok",
    summary: `${count} tools (with the built-in buzz tools), all ≤ ${MAX_QUALIFIED_NAME} characters as ${AGENT_PREFIX}<name>, no collisions`,
  };
}

// ---------------------------------------------------------------------------------------

function skipped(name: string, because: string): CheckResult {
  return { name, mark: "skip", summary: `skipped: the ${because} check${because.startsWith("MCP") ? "s" : ""} failed` };
}

type Bounded<T> = { ok: true; value: T } | { ok: false; error: string; cause?: unknown };

/** Runs `fn` with a time limit; a throw or a timeout becomes `{ok: false, error}`. */
async function bounded<T>(ms: number, what: string, fn: () => Promise<T>): Promise<Bounded<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Bounded<T>>((r) => {
    timer = setTimeout(() => r({ ok: false, error: `${what} did not finish within ${Math.round(ms / 1000)} s` }), ms);
  });
  try {
    return await Promise.race([
      fn().then(
        (value): Bounded<T> => ({ ok: true, value }),
        (err: unknown): Bounded<T> => ({ ok: false, error: message(err), cause: err }),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const MARKS: Record<Mark, string> = { ok: "✓", fail: "✗", skip: "–" };

/** The table a person reads: mark, check name, summary; details indented below. */
export function formatResults(results: CheckResult[]): string {
  const width = Math.max(...results.map((r) => r.name.length));
  const lines: string[] = [];
  for (const r of results) {
    lines.push(`${MARKS[r.mark]} ${r.name.padEnd(width)}  ${r.summary}`);
    for (const d of r.details ?? []) lines.push(`  ${" ".repeat(width)}  ${d}`);
  }
  const failed = results.filter((r) => r.mark === "fail").length;
  lines.push("", failed ? `${failed} check${failed === 1 ? "" : "s"} failed` : "all checks passed");
  return `${lines.join("\n")}\n`;
}
