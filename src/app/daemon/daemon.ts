/**
 * The daemon: starts the parts in order (state directory and its lock, stores, relay, link,
 * agent pool, the mention's path from turn-path.ts, health/metrics, presence, heartbeat)
 * and connects them by events and callbacks; reload (SIGHUP) and graceful shutdown undo
 * or adjust the same parts (docs/architecture.md §1–§3). It only constructs and connects:
 * what a part does lives with it (publish confirmation in relay/confirm.ts, control
 * actions and intake in turn/, reload rules in config/reload.ts, start-up waits in
 * start-waits.ts, readiness and /status in daemon-status.ts).
 */
import { join } from "node:path";
import { sleep } from "../../base/backoff.js";
import { AgentPool, migrateChannelDirsLogged, poolOptionsFromConfig, type AgentSpawned } from "../../agent/index.js";
import { stopRecordedLeftovers, trackAgentGroup, type AgentGroupRecord } from "../../agent/leftovers.js";
import { sandboxFor } from "../../agent/sandbox-config.js";
import type { AgentSandbox } from "../../agent/sandbox-plan.js";
import type { Logger } from "../../base/log.js";
import { agentGateEnv, resolveAgentCommand } from "../../config/agent-command.js";
import { resolveEnforce } from "../../config/enforce.js";
import { ConfigError, loadConfig, type LoadedConfig } from "../../config/load.js";
import { planReload } from "../../config/reload.js";
import { DEFAULT_HEARTBEAT_PROMPT, type Config } from "../../config/schema.js";
import type { DevRelay } from "../../devrelay/index.js";
import type { GateContext } from "../../gate/index.js";
import { Heartbeat } from "../../turn/heartbeat.js";
import { LinkServer, linkRootPath } from "../../link/index.js";
import { HttpEndpoint } from "../../proxy/http-endpoint.js";
import { SqliteStore, STORE_FILE, type QueueBackend, type Scheduler } from "../../queue/index.js";
import type { PostgresStore } from "../../queue/pg-store.js";
import { pgSchemaFor } from "../../queue/pg-migrations.js";
import { keepPruned } from "../../queue/retention.js";
import { checkFaultEnv } from "../../relay/faults.js";
import { FreshChannels } from "../../buzz/fresh-channel.js";
import { RelayClient } from "../../relay/index.js";
import { ChannelDirectory, ChannelFollower, configSelector, ProfileCache, shortNpub } from "../../buzz/index.js";
import { verifyStats } from "../../nostr/verify.js";
import { Presence } from "../../buzz/presence.js";
import { AgentRecords } from "../../buzz/agent-records.js";
import type { TurnDispatcher } from "../../turn/dispatch.js";
import type { Intake } from "../../intake/intake.js";
import { turnPublisher } from "../../turn/publisher.js";
import { Publisher } from "../../relay/publisher.js";
import { readiness, RecentDenials, statusSnapshot, type DaemonParts, type LastReload } from "./daemon-status.js";
import { startHttp, type ReadyReport } from "../http/http.js";
import { Metrics } from "../http/metrics.js";
import { preflightAgent, prepareStateDir } from "./preflight.js";
import { claimInstanceAtStart, discoverChannelsAtStart, openFleetStoreAtStart } from "./start-waits.js";
import { InstanceBeacon } from "../../buzz/instance.js";
import { instanceId } from "./instance-id.js";
import { StateLock } from "./state-lock.js";
import { renderStatusPage, statusJson, type StatusSnapshot } from "../http/status-page.js";
import { RecentTurns } from "./recent-turns.js";
import { buildTurnPath } from "./turn-path.js";
import { titleRedaction } from "./title-redaction.js";
import { UsageToday } from "./usage-today.js";
import { workStatusBoard } from "./work-status-wiring.js";

/** How long a stop waits for the gate's answers under way (bounded: a relay short of budget may hold them). */
const ANSWERS_GRACE_MS = 5_000;

export interface DaemonOptions {
  loaded: LoadedConfig;
  logger: Logger;
  /** Re-read on SIGHUP; default the loaded file. */
  configFile?: string;
  /** Its metrics; default its own, with the process's. A team gives each agent one without (team.ts). */
  metrics?: Metrics;
  /** With `relay.url: embedded`: a development relay already running (a team's one), instead of one of its own. */
  devRelay?: DevRelay;
  /** Whether it serves `http:` itself; a team's agents do not (the team does, for all). Default true. */
  ownHttp?: boolean;
  /** A cap shared with other daemons of the process (a team's `team.max_concurrent`): a turn starts only with a slot. */
  sharedSlots?: SharedSlots;
  /** The pubkeys of the other agents of its team: agents, whose messages never continue a thread (docs/conversations.md). */
  teammates?: () => string[];
}

/** Turn slots shared by a team's agents (team.ts). */
export interface SharedSlots {
  /** Takes a slot when one is free. */
  take(): boolean;
  /** Gives one back; `ended`: a turn ended, so the others may start one now. */
  give(ended: boolean): void;
}

export class Daemon {
  config: Config;
  readonly metrics: Metrics;
  /** Usage reported since midnight UTC, for `!status` and `/status`. */
  readonly usageToday = new UsageToday();
  private readonly denials = new RecentDenials();
  private readonly recentTurns = new RecentTurns();
  private readonly startedAt = Date.now();
  /** The last SIGHUP's outcome, for `/status`. */
  private lastReload?: LastReload;
  devRelay?: DevRelay;
  relay!: RelayClient;
  /**
   * This daemon's own SQLite under state_dir: the queue of a single daemon, and what belongs
   * to this machine in a fleet too (cursors, agent session ids, agent process groups).
   */
  store!: SqliteStore;
  /** The queue: `store` itself, or with `state.backend: postgres` the fleet's shared database. */
  backend?: QueueBackend;
  scheduler!: Scheduler;
  dispatcher!: TurnDispatcher;
  directory!: ChannelDirectory;
  private follower!: ChannelFollower;
  private pool!: AgentPool;
  private link!: LinkServer;
  private gateContext!: GateContext;
  private profiles!: ProfileCache;
  private intake!: Intake;
  private answersSettled?: () => Promise<void>;
  private closeAnswers?: () => void;
  private http?: { url: string; close(): Promise<void> };
  private stateLock?: StateLock;
  private beacon?: InstanceBeacon;
  /** Another daemon of this identity started earlier: this one stops (buzz/instance.ts). */
  private yielded = false;
  private sandbox?: AgentSandbox;
  private presence?: Presence;
  private publisher!: Publisher;
  /** The profile, directory entry and bot seats Buzz Desktop reads (buzz/agent-records.ts). */
  records?: AgentRecords;
  private heartbeat?: Heartbeat;
  private stopPruning?: () => void;
  private stopping = false;
  /** Set once channels are discovered: a turn started before that finds no channel and fails. */
  private listening = false;
  /** Aborted by a stop signal while start() still waits for the relay or the database. */
  private readonly startAbort = new AbortController();
  private stopped?: Promise<void>;
  private readonly log: Logger;
  private resolveShutdown!: (reason: string) => void;
  /** Resolves when something asked the daemon to stop (`!shutdown`, a signal). */
  readonly shutdownRequested = new Promise<string>((r) => (this.resolveShutdown = r));

  constructor(private readonly o: DaemonOptions) {
    this.config = o.loaded.config;
    this.log = o.logger;
    this.metrics = o.metrics ?? new Metrics();
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
    const log = this.log;
    checkFaultEnv();
    for (const w of prepareStateDir(cfg.state_dir)) log.warn({ evt: "state.permissions" }, w);
    // Before anything touches the directory's contents (queue, link socket): one daemon per state_dir.
    this.stateLock = StateLock.acquire(cfg.state_dir);
    preflightAgent(cfg.agent, secretKey);
    this.store = new SqliteStore(join(cfg.state_dir, STORE_FILE));
    this.store.noteIdentity(pubkey);
    // Before anything connects: `agent.sandbox: bubblewrap` where it cannot run stops start-up here.
    const sandbox = (this.sandbox = sandboxFor(this.o.loaded, log));
    sandbox.check(cfg.channels.map((c) => c.agent ?? {}));
    await sandbox.start();
    // A fleet's queue is its database; a single daemon's is its own store.
    let fleet: PostgresStore | undefined;
    if (cfg.state.backend === "postgres") {
      // Up before the database wait, so /readyz answers 503 (state: waiting) meanwhile.
      await this.startHttpOnce();
      fleet = await openFleetStoreAtStart({
        url: cfg.state.url!,
        pubkey,
        schema: pgSchemaFor(this.o.loaded.team?.id),
        signal: this.startAbort.signal,
        logger: log,
      });
    }
    const backend = (this.backend = fleet ?? this.store);

    let url = cfg.relay.url;
    if (url === "embedded" && this.o.devRelay) {
      this.o.devRelay.addRelayMember(pubkey);
      url = this.o.devRelay.url;
    } else if (url === "embedded") {
      // Loaded only here: a daemon on a real relay never loads the development relay.
      const { startDevRelay } = await import("../../devrelay/index.js");
      this.devRelay = await startDevRelay({ port: 0, seed: cfg.relay.seed });
      this.devRelay.addRelayMember(pubkey);
      url = this.devRelay.url;
      log.info({ evt: "relay.embedded", url, channels: this.devRelay.seeded }, "embedded development relay started");
    }

    const relay = (this.relay = new RelayClient({
      url,
      secretKey,
      logger: log,
      cursor: { get: () => this.store.minCursor() },
      publish: { timeoutMs: cfg.relay.publish_timeout },
      connection: { frameQuota: { frames: cfg.relay.frame_quota.frames, windowMs: cfg.relay.frame_quota.window } },
      frameShare: cfg.relay.frame_quota.share,
    }));
    this.directory = new ChannelDirectory(relay, log).attach();
    this.follower = new ChannelFollower(relay, this.directory, configSelector(cfg));
    this.profiles = new ProfileCache(relay);
    const channels = new FreshChannels(this.directory);
    // Every publish of this daemon leaves through it: counted by kind and outcome, logged as publish.done.
    const publisher = (this.publisher = new Publisher({
      relay,
      logger: log,
      onDone: (kind, status) => this.metrics.published(kind, status),
    }));
    const out = turnPublisher(publisher, log);

    this.link = new LinkServer({
      socketPath: join(cfg.state_dir, "link.sock"),
      logger: log,
      onHookRan: (hook, verdict, ms) => this.metrics.hookFanout(hook, verdict, ms / 1000),
    });
    await this.link.start();
    const enforce = resolveEnforce(cfg);
    this.pool = new AgentPool(
      poolOptionsFromConfig(
        { ...cfg.agent, ...resolveAgentCommand(cfg.agent), env: agentGateEnv(cfg, enforce) },
        {
          secret: secretKey,
          hooksAgentEnforced: enforce === "agent",
          logger: log,
          sandbox,
          linkRoot: linkRootPath(cfg.state_dir),
          // Each process that may take its MCP slot over HTTP gets its own loopback port (mcp.transport, read live);
          // in a network of its own, through a socket in its link directory.
          reserveEndpoint: async ({ network, linkDir }) => {
            if (this.config.mcp.transport === "stdio" || network === "none" || (network === "private" && !linkDir)) return undefined;
            return HttpEndpoint.open({ logger: log, socket: network === "private" ? join(linkDir!, "mcp.sock") : undefined });
          },
          stateDir: cfg.state_dir,
        },
      ),
    );
    this.pool.on("spawn", (p: AgentSpawned) => {
      this.metrics.agentSpawned();
      trackAgentGroup(this.agentGroups(), p.pid, p.exited);
    });
    this.pool.on("crash", () => this.metrics.agentCrashed());
    this.pool.on("circuit", (c: { state: string }) => this.metrics.circuitState(c.state === "open"));
    this.pool.on("rotate", (r: { reason: string }) => this.metrics.sessionRotated(r.reason));

    const redaction = titleRedaction(cfg.state_dir, secretKey, cfg.state.url);
    const path = buildTurnPath({
      config: () => this.config,
      start: cfg,
      titleRedaction: redaction,
      pubkey,
      relay,
      publisher,
      directory: this.directory,
      profiles: this.profiles,
      channels,
      out,
      backend,
      local: this.store,
      pool: this.pool,
      link: this.link,
      enforce,
      metrics: this.metrics,
      usage: this.usageToday,
      denials: this.denials,
      recentTurns: this.recentTurns,
      pump: () => this.pump(),
      stopping: () => this.stopping,
      shutdown: () => this.resolveShutdown("!shutdown"),
      workStatus: workStatusBoard(publisher, redaction),
      teammates: this.o.teammates,
      logger: log,
    });
    const scheduler = (this.scheduler = path.scheduler);
    this.dispatcher = path.dispatcher;
    this.gateContext = path.gateContext;
    this.intake = path.intake;
    this.answersSettled = path.answersSettled;
    this.closeAnswers = path.closeAnswers;

    relay.on("event", (ev) => void this.intake.handle(ev));
    relay.on("state", (s) => this.metrics.relayState(s));
    this.metrics.sample({
      queueDepth: () => scheduler.depth().queued,
      agentProcesses: () => this.pool.stats().processes,
      relayReconnects: () => relay.metrics.reconnects ?? 0,
      signatureChecks: () => verifyStats,
      frameBudget: () => relay.metrics.budget,
      ...(scheduler.shared ? { fleet: () => scheduler.fleetStatus()! } : {}),
    });
    await this.startHttpOnce();

    // Agents a SIGKILLed predecessor left running: stopped before new ones start.
    await stopRecordedLeftovers(this.agentGroups(), log);
    await scheduler.start();
    this.pool.start();
    this.stopPruning = keepPruned([backend, this.store], log);
    this.presence = new Presence(relay, publisher);
    await relay.start();
    // One daemon per identity: before it listens anywhere (docs/architecture.md §1).
    const beacon = (this.beacon = new InstanceBeacon({
      relay,
      publisher,
      secretKey,
      pubkey,
      instance: instanceId(cfg.state_dir),
      fleet: await fleet?.fleetId(),
      logger: log,
      onLost: () => {
        this.yielded = true;
        this.resolveShutdown("instance.conflict");
      },
    }));
    await claimInstanceAtStart({
      claim: () => beacon.claim(),
      lastAuthError: () => relay.lastAuthError,
      pubkey,
      signal: this.startAbort.signal,
      logger: log,
    });
    beacon.start();
    // Read while the subscription starts; a reply that might continue a conversation waits for it (Gate.decide).
    void path.active
      .rebuild(pubkey, (f) => relay.query(f))
      .then((threads) => log.info({ evt: "gate.active_rebuilt", threads }, "conversations the agent is in, rebuilt"));
    const found = await discoverChannelsAtStart({
      refresh: () => this.follower.refresh(),
      lastAuthError: () => relay.lastAuthError,
      pubkey,
      signal: this.startAbort.signal,
      logger: log,
    });
    log.info(
      {
        evt: "daemon.started",
        pubkey,
        relay: url,
        channels: found.map((c) => ({ id: c.id, name: c.name, type: c.type })),
        enforce,
        http: this.http?.url,
        heartbeat: cfg.heartbeat ? { every_ms: cfg.heartbeat.every, channel: cfg.heartbeat.channel } : undefined,
      },
      `listening in ${found.length} channel${found.length === 1 ? "" : "s"}`,
    );
    // Before any turn: directories named by a channel's name alone move to their per-id names.
    migrateChannelDirsLogged({ cwdTemplate: cfg.agent.cwd!, stateDir: cfg.state_dir, channels: found }, log);
    // Sandboxed processes are bound to a channel: with one channel, the spare can be made now.
    if (found.length === 1) this.pool.warmFor(found[0]!);
    if (found.length === 0)
      log.warn({ evt: "daemon.no_channels" }, "the identity is a member of no selected channel: nothing to listen to yet");
    if (cfg.relay.presence) this.presence.start();
    this.startRecords();
    this.listening = true;
    this.pump();
    this.startHeartbeat();
  }

  /**
   * What Buzz Desktop reads of the agent, published now and again when the config reloads or
   * the agent's channels change (docs/protocol.md "Buzz Desktop"). In the background: a relay
   * that refuses these records never keeps the daemon from answering.
   */
  private startRecords(): void {
    const records = (this.records = new AgentRecords({
      relay: { query: (f) => this.relay.query(f), send: (t) => this.publisher.send(t) },
      pubkey: this.pubkey,
      config: () => this.config,
      teamId: this.o.loaded.team?.id,
      authTag: this.o.loaded.authTag,
      joined: () => this.directory.list(),
      logger: this.log,
    }));
    void records.sync("start");
    const changed = () => void records.sync("membership");
    this.directory.on("joined", changed);
    this.directory.on("left", changed);
  }

  /** `heartbeat:` configured: prompt the idle agent on a timer (applies from start-up; a reload does not change it). */
  private startHeartbeat(): void {
    const hb = this.config.heartbeat;
    if (!hb) return;
    const text = hb.prompt ?? DEFAULT_HEARTBEAT_PROMPT;
    const backend = this.backend!;
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
      claimTick: () => backend.claimPeriod(`heartbeat:${hb.channel}`, hb.every),
    });
    this.heartbeat.start();
  }

  /** /healthz, /readyz, /metrics, /status and /status.json, once (in fleet mode already while the database is awaited). */
  private async startHttpOnce(): Promise<void> {
    const cfg = this.config;
    if (!cfg.http || this.http || this.o.ownHttp === false) return;
    this.http = await startHttp({
      listen: cfg.http.listen,
      allowHosts: cfg.http.allow_hosts,
      metrics: this.metrics,
      readiness: () => this.readiness(),
      status: () => renderStatusPage(this.statusSnapshot()),
      statusJson: () => statusJson(this.statusSnapshot()),
      logger: this.log,
    });
  }

  /**
   * The record of the agent process groups this daemon started, in its own store. A write
   * the store cannot take now (a full disk) is logged and skipped, never fatal: at worst a
   * SIGKILL of this daemon leaves that agent running for the next start to miss.
   */
  private agentGroups(): AgentGroupRecord {
    const store = this.store;
    const attempt = (what: string, write: () => void) => {
      try {
        write();
      } catch (err) {
        this.log.warn({ evt: "queue.store_write_failed", what, err: err instanceof Error ? err.message : String(err) });
      }
    };
    return {
      recordAgentGroup: (pgid, identity) => attempt("agent process group", () => store.recordAgentGroup(pgid, identity)),
      forgetAgentGroup: (pgid) => attempt("agent process group", () => store.forgetAgentGroup(pgid)),
      agentGroups: () => store.agentGroups(),
    };
  }

  /** A stop signal during start(): the wait for the relay or the database ends and start() throws. */
  abortStart(): void {
    this.startAbort.abort();
  }

  /** queue → turn: starts every batch the scheduler (and a team's shared cap) allows now. */
  pump(): void {
    if (this.stopping || !this.dispatcher || !this.listening) return;
    const slots = this.o.sharedSlots;
    for (;;) {
      if (slots && !slots.take()) return;
      const batch = this.scheduler.next();
      if (!batch) return slots?.give(false);
      const turn = this.dispatcher.start(batch);
      if (slots) void turn.finally(() => slots.give(true));
    }
  }

  private parts(): DaemonParts {
    return {
      config: this.config,
      configFile: this.o.configFile ?? this.o.loaded.file,
      pubkey: this.pubkey,
      startedAt: this.startedAt,
      stopping: this.stopping,
      relayUrl: (this.devRelay ?? this.o.devRelay)?.url ?? this.config.relay.url,
      relay: this.relay,
      store: this.store,
      backend: this.backend,
      scheduler: this.scheduler,
      dispatcher: this.dispatcher,
      intakePaused: this.intake?.pausedFor,
      directory: this.directory,
      pool: this.pool,
      usage: this.usageToday,
      denials: this.denials,
      recent: this.recentTurns,
      lastReload: this.lastReload,
      nameOf: (pk) => {
        // A profile's name, not the short npub a pubkey without one is shown as.
        const p = this.profiles?.peek(pk);
        return p && p.displayName !== shortNpub(pk) ? p.displayName : undefined;
      },
    };
  }

  /** What `/status` shows, gathered from the parts that know it. */
  statusSnapshot(): StatusSnapshot {
    return statusSnapshot(this.parts());
  }

  readiness(): ReadyReport {
    return readiness(this.parts());
  }

  /**
   * SIGHUP: policy, team instructions, channels and mcp lists apply to new turns; every other
   * changed key is named as needing a restart (config/reload.ts). The outcome is kept for
   * `/status`. A team reads the file once for all its agents and gives each its part.
   */
  async reload(given?: LoadedConfig | Error): Promise<boolean> {
    const file = this.o.configFile ?? this.o.loaded.file;
    let next: LoadedConfig;
    try {
      if (given instanceof Error) throw given;
      next = given ?? loadConfig(file);
    } catch (err) {
      const detail = err instanceof ConfigError ? err.message : String(err);
      const errors = detail.split("\n");
      this.lastReload = { at: Date.now(), outcome: "refused", errors };
      this.log.error({ evt: "config.reload_refused", file, errors }, "new config is invalid; keeping the old one");
      return false;
    }
    const plan = planReload({ pubkey: this.pubkey, config: this.config }, next);
    if (!plan.ok) {
      this.lastReload = { at: Date.now(), outcome: "refused", needsRestart: plan.needsRestart };
      this.log.error(
        { evt: "config.reload_refused", file, needs_restart: plan.needsRestart },
        `needs a restart: ${plan.needsRestart.join(", ")}; keeping the old config`,
      );
      return false;
    }
    if (plan.needsRestart.length)
      this.log.warn(
        { evt: "config.reload_partial", file, needs_restart: plan.needsRestart },
        `needs a restart: ${plan.needsRestart.join(", ")}; these keep their running values, the rest applies now`,
      );
    this.config = plan.config;
    this.gateContext.config = this.config;
    const channels = await this.follower.refresh(configSelector(this.config));
    this.lastReload = { at: Date.now(), outcome: plan.needsRestart.length ? "partial" : "applied", needsRestart: plan.needsRestart };
    this.log.info({ evt: "config.reloaded", file, channels: channels.length }, "config reloaded");
    void this.records?.sync("reload");
    return true;
  }

  /** Stops intake, lets turns finish up to shutdown_grace, re-queues the rest, says offline. */
  stop(): Promise<void> {
    this.stopped ??= this.doStop();
    return this.stopped;
  }

  private async doStop(): Promise<void> {
    this.stopping = true;
    this.intake?.close();
    this.scheduler?.stopClaiming();
    this.closeAnswers?.();
    this.log.info({ evt: "daemon.stopping", in_flight: this.dispatcher?.inFlight ?? 0 }, "shutting down");
    this.presence?.stop();
    this.stopPruning?.();
    this.heartbeat?.stop();
    const interrupted = (await this.dispatcher?.drain(this.config.shutdown_grace)) ?? 0;
    if (interrupted)
      this.log.info(
        { evt: "daemon.turns_requeued", count: interrupted },
        "turns still running at the end of the grace were cancelled; they run again after restart",
      );
    // A 🔒 this daemon claimed is its alone to post (the fleet's others stay silent): not dropped at the door.
    if (this.answersSettled) {
      const waited = new AbortController();
      await Promise.race([this.answersSettled(), sleep(ANSWERS_GRACE_MS, waited.signal)]);
      waited.abort();
    }
    this.dispatcher?.closeSessions();
    await this.pool?.close().catch(() => undefined);
    await this.link?.stop().catch(() => undefined);
    this.sandbox?.close();
    // "offline" is the identity's: not said by a daemon that never listened or gave way to another.
    if (this.config.relay.presence && this.listening && !this.yielded) await this.presence?.offline();
    await this.beacon?.stop();
    this.follower?.stop();
    this.relay?.stop();
    await this.http?.close().catch(() => undefined);
    await this.scheduler?.close();
    if (this.backend !== this.store) await this.backend?.close().catch(() => undefined);
    this.store?.closeNow();
    await this.devRelay?.close().catch(() => undefined);
    this.stateLock?.release();
    this.log.info({ evt: "daemon.stopped" }, "stopped");
  }
}
