/**
 * The daemon: builds each step's object and connects them along the mention's one-way
 * path (relay → gate → queue → turn dispatcher → agent), plus presence, health/metrics,
 * reload and graceful shutdown. Logic lives in the step folders; this file only wires.
 */
import { mkdirSync, realpathSync } from "node:fs";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { cliPath } from "../base/cli-path.js";
import { dirname, join, resolve } from "node:path";
import type { Event, EventTemplate } from "nostr-tools";
import { AgentPool, AgentSandbox, agentEnvironment, poolOptionsFromConfig, spareCwd, CHANNEL_PLACEHOLDER, type AgentSpawned } from "../agent/index.js";
import { resolveEnforce } from "../config/enforce.js";
export { resolveEnforce };
import { processIdentity, stopLeftoverAgents } from "../agent/leftovers.js";
import { checkFaultEnv } from "../relay/faults.js";
import { ConfigError, loadConfig, type LoadedConfig } from "../config/load.js";
import type { Config, MidTurnMode } from "../config/schema.js";
import type { DevRelay } from "../devrelay/index.js";
import { Heartbeat } from "../heartbeat/heartbeat.js";
import { DEFAULT_HEARTBEAT_PROMPT } from "../config/schema.js";
import { ControlExecutor, DeniedReporter, Gate, SiblingCheck, type ControlActions, type GateContext } from "../gate/index.js";
import { LinkServer, linkRootPath } from "../link/index.js";
import { QueueStore, Scheduler, STATE_RETENTION_MS, STORE_FILE, scopeKey, type QueueRefusal } from "../queue/index.js";
import { FleetScheduler } from "../queue/fleet-scheduler.js";
import { PostgresStore } from "../queue/pg-store.js";
import { LeaseLostError, QueueStoreError, StateRefusedError } from "../queue/errors.js";
import { sleep } from "../base/backoff.js";
import { ChannelDirectory, ChannelFollower, configSelector, isSuccess, ProfileCache, RelayClient, verifySignature, verifyStats, type ChannelInfo, type PublishOutcome } from "../relay/index.js";
import { message, presence } from "../relay/events.js";
import { refusalAdvice } from "../relay/auth-advice.js";
import { RelayHttpError } from "../relay/errors.js";
import { npub } from "../config/keys.js";
import { TurnDispatcher } from "../turn/dispatch.js";
import { midTurnHow } from "../turn/mid-turn.js";
import { Amendments } from "../turn/amend.js";
import { KIND } from "../relay/kinds.js";
import type { Enforce } from "../turn/run.js";
import type { TurnPublisher } from "../turn/ports.js";
import { startHttp, type ReadyReport } from "./http.js";
import { agentCommandProblem, agentCwdProblem, stateDirProblem } from "./preflight.js";
import { StateLock } from "./state-lock.js";
import type { Logger } from "../base/log.js";
import { Metrics } from "./metrics.js";
import { UsageToday } from "./usage-today.js";
import { renderStatusPage, type StatusSnapshot } from "./status-page.js";
import { processParents, treeRss } from "./proc-memory.js";
import { channelSelected, policyFor } from "../config/schema.js";

/** Presence is kept alive in Buzz's cache for 90 s; re-announce well inside that. */
const PRESENCE_INTERVAL_MS = 60_000;
/** Channel metadata older than this is re-read before a turn (descriptions change rarely). */
const CHANNEL_METADATA_TTL_MS = 60_000;
/** Denials the status page lists. */
const RECENT_DENIALS = 20;

export interface DaemonOptions {
  loaded: LoadedConfig;
  logger: Logger;
  /** Re-read on SIGHUP; default the loaded file. */
  configFile?: string;
}

/** `agent.command: buzz-bridge` runs this very installation (the demo agent), wherever it lives. */
export function resolveAgentCommand(cfg: Config["agent"]): { command: string; args: string[] } {
  if (cfg.command !== "buzz-bridge") return { command: cfg.command, args: cfg.args };
  return { command: process.execPath, args: [cliPath(), ...cfg.args] };
}

/** The state directory cannot be made or used (permissions, a file in the way). */
export class StateDirError extends Error {
  override name = "StateDirError";
}

/** Something `run` needs is missing (the agent command, a writable work area): the same words `doctor` prints. */
export class PreflightError extends Error {
  override name = "PreflightError";
}

/** start() gave up waiting for the relay because a stop was requested: not a failure. */
export class StartAbortedError extends Error {
  override name = "StartAbortedError";
  constructor(cause: unknown) {
    super("stopped during start-up while waiting for the relay", { cause });
  }
}

/**
 * With `gates.enforce: agent` the agent runs the hooks itself (buzz-agent): its rejection
 * budget is `gates.max_rejections` too, unless agent.env sets its own.
 */
export function agentGateEnv(cfg: Config, enforce: Enforce): Record<string, string> {
  if (enforce !== "agent") return cfg.agent.env;
  return { BUZZ_AGENT_STOP_MAX_REJECTIONS: String(cfg.gates.max_rejections), ...cfg.agent.env };
}

/**
 * The agent sandbox for this config: hidden are the paths the configuration names for the
 * bridge itself (config file, key file, state directory) and the directory holding the
 * channels' working directories.
 */
export function sandboxFor(loaded: LoadedConfig, logger?: Logger): AgentSandbox {
  const cfg = loaded.config;
  const hide = bridgePaths(loaded).map((p) => p.path);
  const install = realpathSync(dirname(dirname(cliPath())));
  return new AgentSandbox({ mode: cfg.agent.sandbox, network: cfg.agent.network, binds: cfg.agent.sandbox_binds, hide, stateDir: cfg.state_dir, install }, logger);
}

/** The paths the configuration names for the bridge itself, which a sandboxed agent must not see. */
export function bridgePaths(loaded: LoadedConfig): Array<{ label: string; path: string }> {
  const cfg = loaded.config;
  return [
    { label: "config file", path: loaded.file },
    ...(cfg.identity.secret_key_file ? [{ label: "key file", path: cfg.identity.secret_key_file }] : []),
    { label: "state directory", path: cfg.state_dir },
    ...(cfg.agent.cwd.includes(CHANNEL_PLACEHOLDER) ? [{ label: "channels' working directories", path: spareCwd(cfg.agent.cwd, false) }] : []),
    // The bridge's other files: not secrets, but the bridge's, not the agent's.
    ...(cfg.identity.auth_tag_file ? [{ label: "auth tag file", path: resolve(dirname(loaded.file), cfg.identity.auth_tag_file) }] : []),
    ...(cfg.heartbeat?.prompt_file ? [{ label: "heartbeat prompt file", path: cfg.heartbeat.prompt_file }] : []),
    ...(cfg.relay.seed ? [{ label: "dev relay seed", path: cfg.relay.seed }] : []),
  ];
}

export class Daemon {
  config: Config;
  readonly metrics = new Metrics();
  /** Usage reported since midnight UTC, for `!status` and `/status`. */
  readonly usageToday = new UsageToday();
  /** The last denials (newest last), for `/status`. */
  private readonly denials: StatusSnapshot["denials"] = [];
  private readonly startedAt = Date.now();
  devRelay?: DevRelay;
  relay!: RelayClient;
  /** This daemon's own SQLite under state_dir: cursors and agent session ids (in a fleet too, as they are per machine). */
  store!: QueueStore;
  /** With `state.backend: postgres`: the fleet's shared store (events, turns, leases). */
  fleetStore?: PostgresStore;
  scheduler!: Scheduler | FleetScheduler;
  dispatcher!: TurnDispatcher;
  directory!: ChannelDirectory;
  private follower!: ChannelFollower;
  private pool!: AgentPool;
  private link!: LinkServer;
  private gate!: Gate;
  private amendments!: Amendments;
  private gateContext!: GateContext;
  private profiles!: ProfileCache;
  private http?: { url: string; close(): Promise<void> };
  private stateLock?: StateLock;
  private presenceTimer?: NodeJS.Timeout;
  private heartbeat?: Heartbeat;
  private pruneTimer?: NodeJS.Timeout;
  private readonly metadataReadAt = new Map<string, number>();
  private stopping = false;
  /** Set once channels are discovered: a turn started before that finds no channel and fails. */
  private listening = false;
  /** A stop was asked for while start() was still waiting for the relay. */
  private startAborted = false;
  private wakeStart?: () => void;
  private stopped?: Promise<void>;
  private readonly log: Logger;
  private resolveShutdown!: (reason: string) => void;
  /** Resolves when something asked the daemon to stop (`!shutdown`, a signal). */
  readonly shutdownRequested = new Promise<string>((r) => (this.resolveShutdown = r));

  constructor(private readonly o: DaemonOptions) {
    this.config = o.loaded.config;
    this.log = o.logger;
  }

  get pubkey(): string {
    return this.o.loaded.pubkey;
  }

  get httpUrl(): string | undefined {
    return this.http?.url;
  }

  async start(): Promise<void> {
    const cfg = this.config;
    const { secretKey, pubkey } = this.o.loaded;
    checkFaultEnv();
    try {
      mkdirSync(cfg.state_dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new StateDirError(`cannot create state_dir ${cfg.state_dir}: ${(err as Error).message}`, { cause: err });
    }
    const stateProblem = stateDirProblem(cfg.state_dir);
    if (stateProblem) throw new StateDirError(stateProblem);
    // Before anything touches the directory's contents (queue, link socket): one daemon per state_dir.
    this.stateLock = StateLock.acquire(cfg.state_dir);
    this.preflight(secretKey);
    this.store = new QueueStore(join(cfg.state_dir, STORE_FILE));
    // Before anything connects: `agent.sandbox: bubblewrap` where it cannot run stops start-up here.
    const sandbox = sandboxFor(this.o.loaded, this.log);
    sandbox.check(cfg.channels.map((c) => c.agent ?? {}));
    if (cfg.state.backend === "postgres") {
      // Up before the database wait, so /readyz answers 503 (state: waiting) meanwhile.
      await this.startHttpOnce();
      this.fleetStore = await this.openFleetStore(cfg.state.url!, pubkey);
    }

    let url = cfg.relay.url;
    if (url === "embedded") {
      // Loaded only here: a daemon on a real relay never loads the development relay.
      const { startDevRelay } = await import("../devrelay/index.js");
      this.devRelay = await startDevRelay({ port: 0, seed: cfg.relay.seed });
      this.devRelay.addRelayMember(pubkey);
      url = this.devRelay.url;
      this.log.info({ evt: "relay.embedded", url, channels: this.devRelay.seeded }, "embedded development relay started");
    }

    this.relay = new RelayClient({
      url,
      secretKey,
      logger: this.log,
      cursor: { get: () => this.store.minCursor() },
      publish: { timeoutMs: cfg.relay.publish_timeout },
      connection: { frameQuota: { frames: cfg.relay.frame_quota.frames, windowMs: cfg.relay.frame_quota.window } },
    });
    this.directory = new ChannelDirectory(this.relay, this.log).attach();
    this.follower = new ChannelFollower(this.relay, this.directory, configSelector(cfg));
    this.profiles = new ProfileCache(this.relay);
    const out = this.publisher();

    this.link = new LinkServer({ socketPath: join(cfg.state_dir, "link.sock"), logger: this.log });
    await this.link.start();
    const enforce = resolveEnforce(cfg);
    const agentKey = [cfg.agent.command, ...cfg.agent.args].join(" ");
    this.pool = new AgentPool(
      poolOptionsFromConfig({ ...cfg.agent, ...resolveAgentCommand(cfg.agent), env: agentGateEnv(cfg, enforce) }, { secret: secretKey, hooksAgentEnforced: enforce === "agent", logger: this.log, sandbox, linkRoot: linkRootPath(cfg.state_dir) }),
    );
    this.pool.on("spawn", (p: AgentSpawned) => {
      this.metrics.agentSpawned();
      this.trackAgentGroup(p.pid, p.exited);
    });
    this.pool.on("crash", () => this.metrics.agentCrashed());
    this.pool.on("circuit", (c: { state: string }) => this.metrics.circuitState(c.state === "open"));
    this.pool.on("rotate", (r: { reason: string }) => this.metrics.sessionRotated(r.reason));

    // What both schedulers share. Second retry waits retry_max: 5 s then 5 min by default, as the Rust bridge does.
    const turns = {
      sessionScope: cfg.agent.session_scope,
      maxConcurrent: cfg.agent.max_concurrent,
      maxAttempts: cfg.queue.max_attempts,
      scopeCap: cfg.queue.scope_cap,
      backoff: { baseMs: cfg.queue.retry_base, factor: Math.max(1, cfg.queue.retry_max / cfg.queue.retry_base), maxMs: cfg.queue.retry_max },
    };

    this.scheduler = this.fleetStore
      ? new FleetScheduler({
          store: this.fleetStore,
          daemon: { id: `${hostname()}/${process.pid}/${randomBytes(3).toString("hex")}`, host: hostname(), pid: process.pid, maxConcurrent: cfg.agent.max_concurrent },
          logger: this.log,
          ...turns,
          onRefused: (r) => this.announceRefusal(r, out),
          confirmPublished: (ids) => this.confirmPublished(ids),
          onWake: () => this.pump(),
          onLost: (turnIds) => this.dispatcher.cancelTurns(turnIds),
          onRotate: async (key) => void (await this.dispatcher.rotate((k) => k === key)),
          onFinalFailure: (f) => void this.dispatcher.postFailure(f.events, f.error, f.scope.channel),
        })
      : new Scheduler({
          store: this.store,
          logger: this.log,
          ...turns,
          onWake: () => this.pump(),
          onFinalFailure: (f) => void this.dispatcher.postFailure(f.events, f.error, f.scope.channel),
          onRefused: (r) => this.announceRefusal(r, out),
        });
    this.dispatcher = new TurnDispatcher({
      config: () => this.config,
      self: pubkey,
      owner: cfg.identity.owner,
      pool: this.pool,
      link: this.link,
      scheduler: this.scheduler,
      relay: { sign: (t) => this.relay.sign(t), publish: (ev) => this.publishConfirmed(ev), query: (f) => this.relay.query(f) },
      out,
      channel: (id) => this.freshChannel(id),
      displayName: async (pk) => (await this.profiles.resolve([pk]).catch(() => new Map())).get(pk)?.displayName,
      enforce,
      sessions: {
        get: (scope) => this.store.session(scope, agentKey),
        save: (scope, id) => this.store.saveSession(scope, agentKey, id),
        forget: (scope) => this.store.forgetSession(scope),
      },
      recordBeforePublish: this.fleetStore && ((turnId, id) => this.recordReplyDurably(turnId, id)),
      logger: this.log,
      onTurnEnd: (status, seconds) => this.metrics.turnEnded(status, seconds),
      onMidTurnDelivered: (method, seconds) => this.metrics.midTurnDelivered(method, seconds),
      onUsage: (channel, model, usage) => {
        this.metrics.turnUsage(channel, model, usage);
        this.usageToday.add(channel, model, usage);
      },
    });

    this.amendments = new Amendments({
      store: this.store,
      // In a fleet the queued events live in the shared database, which this step does not
      // read yet: edits and deletions of queued or running messages are not applied there
      // (an edit of a handled mention is ignored as of an unknown message).
      scheduler: this.scheduler instanceof Scheduler ? this.scheduler : { runningTurn: () => undefined, accept: () => false, dropWaiting: () => false, cancelRunning: () => false },
      cancelTurns: (ids) => void this.dispatcher.cancelTurns(ids),
      retract: (scope, id, author) => this.dispatcher.retract(scope, id, author),
      midTurn: (ev, scope, mode) => this.midTurn(ev, scope, mode),
      ownReactions: (id) => this.relay.query([{ kinds: [KIND.reaction], authors: [pubkey], "#e": [id], limit: 20 }]),
      out,
      logger: this.log,
    });

    this.gateContext = {
      self: pubkey,
      owner: cfg.identity.owner,
      config: cfg,
      channel: (id) => this.directory.get(id),
      // In a fleet the event may be stored by another daemon: each daemon notes what its gate accepted.
      handled: (id) => this.store.has(id) || (!!this.fleetStore && this.store.hasClaim(`accepted:${id}`)),
      verify: verifySignature,
    };
    if (cfg.identity.owner) {
      const siblings = new SiblingCheck({ owner: cfg.identity.owner, lookup: (pk) => this.profiles.lookup(pk) });
      this.gateContext.sibling = (author, ev) => siblings.check(author, ev);
    }
    const actions: ControlActions = {
      cancel: async (target) => {
        const { runningTurnIds, ended } = await this.scheduler.cancel(target);
        this.dispatcher.cancelTurns(runningTurnIds);
        return ended;
      },
      rotate: async (target) => {
        const { runningTurnIds } = await this.scheduler.cancel(target);
        this.dispatcher.cancelTurns(runningTurnIds);
        const key = target.thread ? scopeKey(target.channel, target.thread) : undefined;
        // The fleet's other daemons end their sessions of it before their next turn there.
        await this.fleetStore?.bumpRotation(key ?? target.channel);
        if (key) this.store.forgetSession(key);
        else this.store.forgetChannelSessions(target.channel);
        return this.dispatcher.rotate((k) => (key ? k === key : k === target.channel || k.startsWith(`${target.channel}/`)));
      },
      status: () => ({ inFlight: this.dispatcher.inFlight, queued: this.scheduler.depth().queued, usage: this.usageToday.summary() }),
      shutdown: () => this.resolveShutdown("!shutdown"),
    };
    this.gate = new Gate({
      context: this.gateContext,
      reporter: new DeniedReporter({ logger: this.log, publish: (t) => out.publish(t), verify: verifySignature, claimOnce: this.fleetStore && ((key, ms) => this.fleetStore!.claimOnce(key, ms)) }),
      control: new ControlExecutor({ self: pubkey, actions, publish: (t) => out.publish(t), logger: this.log }),
      logger: this.log,
      claimControl: (id, at) => (this.fleetStore ? this.fleetStore.claimControl(id, at) : this.store.claimControl(id, at)),
      noteSeen: (ch, at) => this.store.noteSeen(ch, at),
    });

    this.relay.on("event", (ev) => void this.intake(ev));
    this.relay.on("state", (s) => this.metrics.relayState(s));
    this.metrics.sample({
      queueDepth: () => this.scheduler.depth().queued,
      agentProcesses: () => this.pool.stats().processes,
      relayReconnects: () => this.relay.metrics.reconnects ?? 0,
      signatureChecks: () => verifyStats,
      ...(this.scheduler instanceof FleetScheduler ? { fleet: () => this.fleetStatus() } : {}),
    });
    await this.startHttpOnce();

    // Agents a SIGKILLed predecessor left running: stopped before new ones start.
    await stopLeftoverAgents(this.store.agentGroups(), this.log);
    for (const g of this.store.agentGroups()) this.store.forgetAgentGroup(g.pgid);
    const recovered = this.scheduler.recover();
    if (recovered.events || recovered.turns) this.log.info({ evt: "queue.recovered", ...recovered }, "re-queued work accepted before the restart");
    this.pool.start();
    this.store.prune(STATE_RETENTION_MS);
    this.pruneTimer = setInterval(() => this.store.prune(STATE_RETENTION_MS), 3_600_000);
    this.pruneTimer.unref();
    await this.relay.start();
    const channels = await this.discoverChannels();
    this.log.info(
      { evt: "daemon.started", pubkey, relay: url, channels: channels.map((c) => ({ id: c.id, name: c.name, type: c.type })), enforce, http: this.http?.url, heartbeat: cfg.heartbeat ? { every_ms: cfg.heartbeat.every, channel: cfg.heartbeat.channel } : undefined },
      `listening in ${channels.length} channel${channels.length === 1 ? "" : "s"}`,
    );
    // Sandboxed processes are bound to a channel: with one channel, the spare can be made now.
    if (channels.length === 1) this.pool.warmFor(channels[0]!.name);
    if (channels.length === 0) this.log.warn({ evt: "daemon.no_channels" }, "the identity is a member of no selected channel: nothing to listen to yet");
    if (cfg.relay.presence) {
      const announce = () => this.publisher().signal(presence("online"));
      announce();
      this.presenceTimer = setInterval(announce, PRESENCE_INTERVAL_MS);
      this.presenceTimer.unref();
    }
    this.listening = true;
    this.pump();
    this.startHeartbeat();
  }

  /** `heartbeat:` configured: prompt the idle agent on a timer (applies from start-up; a reload does not change it). */
  private startHeartbeat(): void {
    const hb = this.config.heartbeat;
    if (!hb) return;
    const text = hb.prompt ?? DEFAULT_HEARTBEAT_PROMPT;
    this.heartbeat = new Heartbeat({
      everyMs: hb.every,
      channel: hb.channel,
      load: () => ({ inFlight: this.dispatcher.inFlight, queued: this.scheduler.depth().queued }),
      listening: () => this.listening && !this.stopping,
      member: () => this.directory.get(hb.channel) !== undefined,
      run: () => this.dispatcher.heartbeat(hb.channel, text),
      logger: this.log,
      onTick: (outcome, reason) => this.metrics.heartbeat(outcome, reason),
      // A fleet fires one heartbeat per period, from whichever daemon ticks first in it.
      claimTick: this.fleetStore && (() => this.fleetStore!.claimPeriod(`heartbeat:${hb.channel}`, hb.every)),
    });
    this.heartbeat.start();
  }

  /** Refuses to start with an agent that cannot run here, worded as `doctor` words it. */
  private preflight(secret: Uint8Array): void {
    const { command } = resolveAgentCommand(this.config.agent);
    const env = agentEnvironment({ configured: this.config.agent.env, secret }).env;
    const problem = agentCommandProblem(command, env.PATH ?? process.env.PATH ?? "") ?? agentCwdProblem(this.config.agent.cwd);
    if (problem) throw new PreflightError(problem);
  }

  /**
   * The first channel discovery. The relay may come up after us (both restarted at boot, a
   * relay upgrade): keep trying with backoff, as the connection itself does, instead of
   * exiting; `abortStart()` (a stop signal) ends the wait.
   */
  private async discoverChannels(): Promise<ChannelInfo[]> {
    for (let delay = 1000; ; delay = Math.min(delay * 2, 30_000)) {
      try {
        return await this.follower.refresh();
      } catch (err) {
        if (this.startAborted) throw new StartAbortedError(err);
        const refused = err instanceof RelayHttpError && (err.status === 401 || err.status === 403) ? err.relayMessage : this.relay.lastAuthError;
        const msg = refused !== undefined ? `the relay refused this identity: ${refusalAdvice(refused, this.pubkey)}; retrying` : "cannot list channels yet (is the relay up?); retrying";
        this.log.warn({ evt: "daemon.discovery_retry", err: err instanceof Error ? err.message : String(err), retry_ms: delay, ...(refused !== undefined ? { npub: npub(this.pubkey) } : {}) }, msg);
        await new Promise<void>((r) => {
          const t = setTimeout(r, delay);
          this.wakeStart = () => (clearTimeout(t), r());
        });
        if (this.startAborted) throw new StartAbortedError(err);
      }
    }
  }

  /** /healthz, /readyz, /metrics and /status, once (in fleet mode already while the database is awaited). */
  private async startHttpOnce(): Promise<void> {
    const cfg = this.config;
    if (!cfg.http || this.http) return;
    this.http = await startHttp({
      listen: cfg.http.listen, metrics: this.metrics, readiness: () => this.readiness(), status: () => renderStatusPage(this.statusSnapshot()), logger: this.log,
    });
  }

  /**
   * The fleet's database at start: waits for it with backoff, as for the relay (both may
   * come up after us), but a refusal (another identity, a newer schema) ends the start.
   */
  private async openFleetStore(url: string, pubkey: string): Promise<PostgresStore> {
    for (let delay = 1000; ; delay = Math.min(delay * 2, 30_000)) {
      try {
        const store = await PostgresStore.open({ url, identity: pubkey });
        this.log.info({ evt: "state.opened", backend: "postgres", where: store.where }, "fleet state database ready");
        return store;
      } catch (err) {
        if (!(err instanceof QueueStoreError) || err instanceof StateRefusedError) throw err;
        if (this.startAborted) throw new StartAbortedError(err);
        this.log.warn({ evt: "state.unreachable", err: err.message, retry_ms: delay }, "cannot use the fleet's database yet; retrying");
        await new Promise<void>((r) => {
          const t = setTimeout(r, delay);
          this.wakeStart = () => (clearTimeout(t), r());
        });
        if (this.startAborted) throw new StartAbortedError(err);
      }
    }
  }

  /** The notice for mentions the queue refused (a scope over its cap, or the queue full). */
  private announceRefusal(r: QueueRefusal, out: TurnPublisher): void {
    const who = [...new Set(r.events.map((e) => e.author))];
    const text = `I'm too far behind in this ${r.reason === "scope-cap" ? "thread" : "bridge"} and skipped ${r.events.length} older message${r.events.length === 1 ? "" : "s"}; please ask again if still needed.`;
    void out.publish(message(r.channel, text, { mentions: who }));
  }

  /**
   * Which of a taken-over turn's recorded replies the relay has. One not found yet may
   * still be on its way from the daemon that died (recorded, then sent): ask again after a
   * publish timeout before the turn runs again.
   */
  private async confirmPublished(ids: string[]): Promise<string[]> {
    const ask = async () => (await this.relay.query([{ ids, limit: ids.length }])).map((e) => e.id).filter((id) => ids.includes(id));
    const found = await ask();
    if (found.length) return found;
    await sleep(this.config.relay.publish_timeout);
    return ask();
  }

  /**
   * Fleet mode: a reply's id goes to the database before the reply goes to the relay. With
   * the database briefly away the publish waits for it; after a lease period it gives up
   * (the turn fails and is retried), since another daemon may hold the scope by then.
   */
  private async recordReplyDurably(turnId: number, eventId: string): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (let delay = 250; ; delay = Math.min(delay * 2, 5000)) {
      try {
        return await (this.scheduler as FleetScheduler).recordBeforePublish(turnId, eventId);
      } catch (err) {
        if (err instanceof LeaseLostError || Date.now() + delay > deadline) throw err;
        this.log.warn({ evt: "state.record_retry", turn: turnId, event: eventId, err: err instanceof Error ? err.message : String(err), retry_ms: delay }, "cannot record the reply before publishing it; waiting for the database");
        await sleep(delay);
      }
    }
  }

  /** A stop signal during start(): the wait for the relay ends and start() throws. */
  abortStart(): void {
    this.startAborted = true;
    this.wakeStart?.();
  }

  /**
   * A channel's metadata for a turn, re-read from its 39000 when older than a minute, so a
   * changed description reaches the agent (a running session gets a "settings changed"
   * block) without a reload. A failed read keeps what the directory knew.
   */
  private async freshChannel(id: string) {
    const known = this.directory.get(id);
    const last = this.metadataReadAt.get(id) ?? 0;
    if (!known || Date.now() - last < CHANNEL_METADATA_TTL_MS) return known;
    this.metadataReadAt.set(id, Date.now());
    const info = await this.directory.refresh(id).catch(() => undefined);
    return info && !info.archived ? info : known;
  }

  /** relay → gate → queue: the first steps of a mention, for every event the relay delivers. */
  private async intake(ev: Event): Promise<void> {
    if (this.stopping) return; // not decided, so the cursor stays put and a restart replays it
    this.metrics.eventReceived(ev.kind);
    try {
      // Decided and, when accepted, queued in this tick: the next event (an edit, a deletion)
      // must find it. Only a possible sibling's decision waits for a look-up; the decision's
      // other effects (answers, control commands) may take time.
      const pending = this.gate.decide(ev);
      const decision = pending instanceof Promise ? await pending : pending;
      const acted = this.gate.act(ev, decision);
      this.metrics.gateDecision(decision.action, decision.action === "drop" || decision.action === "deny" ? decision.reason : decision.action === "control" ? decision.command : decision.action === "amend" ? decision.amend : decision.sibling ? "sibling" : "accepted");
      if (decision.action === "deny") {
        this.denials.push({ at: Date.now(), channel: decision.channel?.id, author: ev.pubkey, reason: decision.reason });
        if (this.denials.length > RECENT_DENIALS) this.denials.shift();
      }
      // The single scheduler accepts synchronously (in this tick); a fleet's accept is the database's.
      const accepting = decision.action === "accept" ? this.scheduler.accept(ev, decision.channel.id) : false;
      if (decision.action === "accept" && (accepting instanceof Promise ? await accepting : accepting)) {
        this.log.info({ evt: "gate.accepted", event: ev.id, channel: decision.channel.id, author: npub(ev.pubkey), ...(decision.sibling ? { sibling: decision.sibling } : {}) }, decision.sibling ? "mention accepted from a sibling agent" : "mention accepted");
        this.midTurn(ev, this.scheduler.scopeOf(ev, decision.channel.id).key, decision.policy.mid_turn);
      } else if (decision.action === "amend") {
        if (decision.amend === "edit") this.amendments.edit(ev, decision.targets[0]!, decision.channel.id, decision.policy.mid_turn);
        else void this.amendments.delete(ev, decision.targets).catch((err) => this.log.error({ evt: "intake.error", event: ev.id, err: String(err) }, "could not handle a deletion"));
        // Decided, not queued as an event of its own: the cursor moves past it.
        this.store.noteSeen(decision.channel.id, ev.created_at);
      }
      // In a fleet the accept is the shared database's; this daemon's own resubscribe cursor
      // moves here, and it notes the event as handled (an edit of it is not a new mention).
      if (decision.action === "accept" && this.fleetStore) {
        this.store.noteSeen(decision.channel.id, ev.created_at);
        this.store.claimOnce(`accepted:${ev.id}`, Number.MAX_SAFE_INTEGER);
      }
      await acted;
    } catch (err) {
      this.log.error({ evt: "intake.error", event: ev.id, err: String(err) }, "could not handle an event");
    }
  }

  /** Records an agent's process group while it runs, so a successor can stop it if this daemon is killed. */
  private trackAgentGroup(pid: number | undefined, exited: Promise<unknown>): void {
    const identity = pid === undefined ? undefined : processIdentity(pid);
    if (pid === undefined || !identity) return;
    this.store.recordAgentGroup(pid, identity);
    void exited.then(() => {
      try {
        this.store.forgetAgentGroup(pid);
      } catch {
        // the store closed first (shutdown): the next start finds the group gone
      }
    });
  }

  /**
   * An accepted event whose scope has a turn running: under `mid_turn` steer/interrupt it
   * joins that turn in the queue (durably) and goes to the agent now; otherwise it waits
   * for the next turn, as every queued event does.
   */
  private midTurn(ev: Event, scope: string, mode: MidTurnMode): void {
    const turnId = this.scheduler.runningTurn(scope);
    if (turnId === undefined) return;
    const how = midTurnHow(mode, ev.pubkey === this.config.identity.owner);
    if (!how || !this.dispatcher.canTake(turnId, ev)) {
      this.log.debug({ evt: "queue.mid_turn_queued", event: ev.id, turn: turnId, mode }, "message arrived mid-turn; it waits for the next turn");
      return;
    }
    if (this.scheduler.joinRunning(turnId, ev.id)) this.dispatcher.take(turnId, ev, how, Date.now());
  }

  /** queue → turn: starts every batch the scheduler allows now. */
  private pump(): void {
    if (this.stopping || !this.dispatcher || !this.listening) return;
    for (let batch = this.scheduler.next(); batch; batch = this.scheduler.next()) {
      void this.dispatcher.start(batch);
    }
  }

  /**
   * Publishes and, when the outcome is uncertain (no OK before a timeout or a dropped
   * connection), asks the relay whether it stored the event after all. A reply stored
   * while its OK was lost must count as published, or the turn would answer twice.
   */
  private async publishConfirmed(ev: Event): Promise<PublishOutcome> {
    const outcome = await this.relay.publish(ev);
    if (outcome.status !== "timeout" && outcome.status !== "disconnected") return outcome;
    const stored = await this.relay.query([{ ids: [ev.id], limit: 1 }]).catch(() => []);
    if (!stored.some((e) => e.id === ev.id)) return outcome;
    this.log.info({ evt: "relay.publish_confirmed", event: ev.id, was: outcome.status }, "the relay had stored the event although its OK was lost");
    return { ...outcome, status: "duplicate", reason: `stored before the ${outcome.status === "timeout" ? "OK timed out" : "connection was lost"}` };
  }

  private publisher(): TurnPublisher {
    return {
      publish: async (t: EventTemplate, o?: { beforePublish?(ev: Event): Promise<void> }) => {
        const event = this.relay.sign(t);
        await o?.beforePublish?.(event);
        const outcome = await this.publishConfirmed(event);
        this.metrics.publishOutcome(outcome.status);
        if (isSuccess(outcome)) return event;
        this.log.warn({ evt: "relay.publish_failed", kind: t.kind, status: outcome.status, reason: outcome.reason }, "publish failed");
        return null;
      },
      signal: (t: EventTemplate) => {
        void this.relay.send(t, { attempts: 1 }).then((r) => this.metrics.publishOutcome(r.outcome.status), () => undefined);
      },
    };
  }

  /** Fleet mode: this daemon's leases and the fleet's queue depth (for /metrics; /status may show it too). */
  fleetStatus(): { daemon: string; leases: number; scopes: string[]; queued: number } {
    const s = this.scheduler as FleetScheduler;
    const scopes = s.leases();
    return { daemon: s.daemonId, leases: scopes.length, scopes, queued: s.depth().queued };
  }

  /** What `/status` shows, gathered from the parts that know it. */
  statusSnapshot(): StatusSnapshot {
    const cfg = this.config;
    if (!this.dispatcher) {
      // Fleet mode, still waiting for the database: the page says so instead of failing.
      const state = cfg.state.backend === "postgres" && !this.fleetStore ? "not started (waiting for the fleet's database)" : "not started";
      return { generatedAt: Date.now(), startedAt: this.startedAt, pubkey: this.pubkey, relay: { url: cfg.relay.url, state }, channels: [], turns: [], denials: [], agents: [], circuit: "closed", usage: this.usageToday.snapshot() };
    }
    const queued = this.scheduler.depthByChannel();
    const parents = processParents();
    return {
      generatedAt: Date.now(),
      startedAt: this.startedAt,
      pubkey: this.pubkey,
      relay: { url: this.devRelay?.url ?? cfg.relay.url, state: this.relay?.state ?? "not started" },
      channels: this.directory.list().filter((c) => !c.archived && channelSelected(cfg, c.id)).map((c) => {
        const p = policyFor(cfg, c.id);
        return { id: c.id, name: c.name, about: c.about, type: c.type, respondTo: p.respond_to, onDenied: p.on_denied, queued: queued.get(c.id) ?? 0 };
      }),
      turns: this.dispatcher.runningTurns(),
      denials: [...this.denials].reverse(),
      agents: this.pool.processes().map((p) => ({
        pid: p.pid, scope: p.scope, spare: p.spare, busy: p.session?.busy ?? false, model: p.session?.model, turns: p.session?.turns ?? 0, rssBytes: treeRss(p.pid, parents),
      })),
      circuit: this.pool.circuit.state,
      usage: this.usageToday.snapshot(),
      ...(this.scheduler instanceof FleetScheduler ? { fleet: this.fleetStatus() } : {}),
    };
  }

  readiness(): ReadyReport {
    const state = this.relay?.state;
    const circuit = this.pool?.circuit.state;
    return {
      checks: [
        { name: "relay", ok: state === "subscribed", detail: state === "subscribed" ? "authenticated and subscribed" : `relay connection is ${state ?? "not started"}${this.relay?.lastAuthError ? ` (${this.relay.lastAuthError})` : ""}` },
        { name: "agent", ok: circuit !== "open", detail: circuit === "open" ? "agent circuit breaker open after repeated crashes" : "agent available" },
        this.stateCheck(),
      ],
    };
  }

  private stateCheck(): ReadyReport["checks"][number] {
    if (this.stopping) return { name: "state", ok: false, detail: "shutting down" };
    if (this.config.state.backend === "postgres" && !this.fleetStore) return { name: "state", ok: false, detail: "waiting for the fleet's PostgreSQL database" };
    return { name: "state", ok: !!this.store, detail: this.fleetStore ? `state store open; fleet database ${this.fleetStore.where}` : "state store open" };
  }

  /** SIGHUP: policy, team instructions, channels and mcp lists apply to new turns. */
  async reload(): Promise<boolean> {
    const file = this.o.configFile ?? this.o.loaded.file;
    let next: LoadedConfig;
    try {
      next = loadConfig(file);
    } catch (err) {
      const detail = err instanceof ConfigError ? err.message : String(err);
      this.log.error({ evt: "config.reload_refused", file, errors: detail.split("\n") }, "new config is invalid; keeping the old one");
      return false;
    }
    const needRestart: string[] = [];
    if (next.pubkey !== this.o.loaded.pubkey) needRestart.push("identity");
    if (next.config.relay.url !== this.config.relay.url) needRestart.push("relay.url");
    if (next.config.state_dir !== this.config.state_dir) needRestart.push("state_dir");
    if (needRestart.length) {
      this.log.error({ evt: "config.reload_refused", file, needs_restart: needRestart }, `changing ${needRestart.join(", ")} needs a restart; keeping the old config`);
      return false;
    }
    if (JSON.stringify(next.config.agent) !== JSON.stringify(this.config.agent) || next.config.identity.owner !== this.config.identity.owner || JSON.stringify(next.config.heartbeat) !== JSON.stringify(this.config.heartbeat)) {
      this.log.warn({ evt: "config.reload_partial" }, "agent settings, the owner and the heartbeat apply after a restart; the rest applies now");
    }
    this.config = { ...next.config, agent: this.config.agent, identity: this.config.identity, heartbeat: this.config.heartbeat };
    this.gateContext.config = this.config;
    const channels = await this.follower.refresh(configSelector(this.config));
    this.log.info({ evt: "config.reloaded", file, channels: channels.length }, "config reloaded");
    return true;
  }

  /** Stops intake, lets turns finish up to shutdown_grace, re-queues the rest, says offline. */
  stop(): Promise<void> {
    this.stopped ??= this.doStop();
    return this.stopped;
  }

  private async doStop(): Promise<void> {
    this.stopping = true;
    if (this.scheduler instanceof FleetScheduler) this.scheduler.stopClaiming();
    this.log.info({ evt: "daemon.stopping", in_flight: this.dispatcher?.inFlight ?? 0 }, "shutting down");
    if (this.presenceTimer) clearInterval(this.presenceTimer);
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.heartbeat?.stop();
    const interrupted = (await this.dispatcher?.drain(this.config.shutdown_grace)) ?? 0;
    if (interrupted) this.log.info({ evt: "daemon.turns_requeued", count: interrupted }, "turns still running at the end of the grace were cancelled; they run again after restart");
    this.dispatcher?.closeSessions();
    await this.pool?.close().catch(() => undefined);
    await this.link?.stop().catch(() => undefined);
    if (this.config.relay.presence && this.relay?.state === "subscribed") {
      await Promise.race([this.relay.send(presence("offline"), { attempts: 1 }).catch(() => undefined), new Promise((r) => setTimeout(r, 1000).unref())]);
    }
    this.follower?.stop();
    this.relay?.stop();
    await this.http?.close().catch(() => undefined);
    await this.scheduler?.close();
    await this.fleetStore?.close().catch(() => undefined);
    this.store?.close();
    await this.devRelay?.close().catch(() => undefined);
    this.stateLock?.release();
    this.log.info({ evt: "daemon.stopped" }, "stopped");
  }
}
