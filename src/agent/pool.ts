/**
 * The agent pool (docs/architecture.md §3): one agent process per active scope, at most
 * `max_concurrent`, reaped after `idle_close`; one initialized warm spare so a mention
 * does not wait for agent start-up; crashed processes fail their turn (AgentCrashedError),
 * are respawned with backoff, and repeated crashes open a circuit breaker.
 *
 * Generic on purpose: it takes a plain options object (see poolOptionsFromConfig) and
 * knows nothing of relays or channels beyond a name for the working directory.
 *
 * With a sandbox, a process is bound at spawn to one channel (its working directory and
 * HOME are mounted into it then, and nothing else of the host's agents' area), so the
 * warm spare is made for the channel that last opened a session: a new thread there takes
 * it at once; a session in another channel spawns cold and the spare moves to that channel.
 *
 * Events: `spawn` {pid, spare, sandboxed, exited}, `spare` {pid}, `exit` {pid, scope?, code, signal, expected},
 * `crash` {pid, scope?, code, signal, stderrTail}, `circuit` {state, until, crashes}, `rotate` {scope, reason}.
 */
import { EventEmitter } from "node:events";
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../base/log.js";
import { silentLogger } from "../base/log.js";
import { agentCwd, spareCwd, type ChannelRef } from "./cwd.js";
import { agentEnvironment, secretForms } from "./env.js";
import { AgentCrashedError, AgentStartError, CircuitOpenError, PoolClosedError } from "./errors.js";
import { CrashBreaker, type CircuitChange, type CircuitState } from "./circuit.js";
import { AgentProcess, type ExitInfo } from "./process.js";
import { AgentSession } from "./session.js";
import { presetSpawn } from "./preset-spawn.js";
import { SandboxError, type ChannelIsolation } from "./sandbox-plan.js";
import { retrySandboxSetup, type SandboxNetwork } from "./sandbox.js";
import type { TurnLimits } from "./turn-control.js";
import type { AcquireOptions, AgentPoolOptions, McpSlotContext, PoolStats, ProcessEndpoint, ServerCommand } from "./pool-options.js";

export {
  poolOptionsFromConfig,
  type AcquireOptions,
  type AgentPoolOptions,
  type McpSlotContext,
  type PoolStats,
  type ProcessEndpoint,
} from "./pool-options.js";
export type { McpSlot } from "./session.js";

/** Where a process runs: a channel (sandboxes are per channel), or no channel yet (an unsandboxed spare). */
interface Target {
  channel: ChannelRef;
  cwd: string;
  isolation?: ChannelIsolation;
}

/** How a process was started: where, with what environment, and the endpoint held for it. */
interface Started {
  target?: Target;
  sandboxed: boolean;
  network: SandboxNetwork;
  env: Record<string, string>;
  endpoint?: ProcessEndpoint;
}

/** Processes with this key serve any channel: they are not sandboxed. */
const PLAIN = "plain";

interface Entry {
  scope: string;
  session: AgentSession;
  idleTimer?: NodeJS.Timeout;
}

/** A process the pool started: the warm spare, or one for a scope; `sandboxed` = run through the sandbox launcher. */
export interface AgentSpawned {
  pid: number;
  spare: boolean;
  sandboxed: boolean;
  /** Settles when the process and all of its process group have exited (the daemon forgets the recorded group then). */
  exited: Promise<unknown>;
}

/** A process that died without being asked to; `scope` is undefined for the warm spare. */
interface AgentCrash {
  pid: number;
  scope: string | undefined;
  code: number | null;
  signal: NodeJS.Signals | null;
  stderrTail: string;
}

/** What an AgentPool emits, checked by tsc on emit/on/once/off. */
export interface AgentPoolEvents {
  circuit: [change: CircuitChange];
  spawn: [info: AgentSpawned];
  /** A new warm spare is ready. */
  spare: [info: { pid: number }];
  crash: [info: AgentCrash];
  /** A scope's process exited, expected or not (a crash also emits `crash`). */
  exit: [info: ExitInfo & { pid: number; scope: string }];
  /** A scope's session was ended; `reason` as in rotate(). */
  rotate: [info: { scope: string; reason: string }];
}

export class AgentPool extends EventEmitter<AgentPoolEvents> {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<AgentSession>>();
  private starting = 0;
  private waiters: Array<() => void> = [];
  private spare: AgentProcess | undefined;
  private spareStarting: Promise<AgentProcess | undefined> | undefined;
  /** The key of the spare being started (see keyOf). */
  private spareStartingKey: string | undefined;
  /** The channel the next spare is made for, when processes are bound to channels. */
  private spareTarget: Target | undefined;
  private readonly procKeys = new WeakMap<AgentProcess, string>();
  /** agent.model / agent.effort as each process's sessions select them (a preset may have applied them at launch). */
  private readonly sessionSettings = new WeakMap<AgentProcess, { model?: string; effort?: string }>();
  private readonly linkDirs = new WeakMap<AgentProcess, string>();
  private readonly started_ = new WeakMap<AgentProcess, Started>();
  /** What the last agent to initialize said of MCP over HTTP; false stops reserving endpoints. */
  private agentHttp: boolean | undefined;
  private linkSeq = 0;
  private spareRetry: NodeJS.Timeout | undefined;
  private closed = false;
  private spawns = 0;
  private readonly breaker: CrashBreaker;
  /** Processes that got through start-up (ACP initialize), and the last start failure's reason. */
  private started = 0;
  private lastStartFailure: string | undefined;
  private readonly log: Logger;
  private readonly limits: TurnLimits;
  private readonly display: string;

  constructor(private readonly o: AgentPoolOptions) {
    super();
    this.log = o.logger ?? silentLogger();
    this.display = [o.command, ...o.args].join(" ");
    this.breaker = new CrashBreaker(o.circuit);
    this.breaker.on("change", (c) => {
      const line = {
        evt: "agent.circuit",
        state: c.state,
        until: c.until ? new Date(c.until).toISOString() : undefined,
        crashes: c.crashes,
        command: this.display,
      };
      if (c.state === "open") this.log.error(line, "agent circuit breaker open: too many crashes");
      else this.log.info(line, "agent circuit breaker closed");
      this.emit("circuit", c);
      if (c.state === "closed") this.ensureSpare();
    });
    this.limits = {
      idleTimeoutMs: o.idleTimeoutMs,
      maxTurnMs: o.maxTurnMs,
      cancelGraceMs: o.cancelGraceMs,
      permissions: o.permissions,
      permissionTimeoutMs: o.permissionTimeoutMs,
    };
  }

  /** Starts warming the spare (if configured). */
  start(): void {
    if (this.o.linkRoot) {
      // Directories left by a daemon that was killed: their sockets are dead.
      rmSync(this.o.linkRoot, { recursive: true, force: true });
      mkdirSync(this.o.linkRoot, { recursive: true, mode: 0o700 });
      chmodSync(this.o.linkRoot, 0o700);
    }
    this.ensureSpare();
  }

  /** Makes the spare for this channel (when processes are bound to channels), e.g. the only channel at start. */
  warmFor(channel: ChannelRef, cwd?: string): void {
    if (this.closed || !this.o.sandbox) return;
    try {
      this.retarget({ channel, cwd: cwd ?? agentCwd(this.o.cwd, channel) });
    } catch (err) {
      this.log.warn({ evt: "agent.spare_failed", err: (err as Error).message }, "could not start the warm spare agent");
    }
  }

  get circuit(): { state: CircuitState; until?: number; crashes: number } {
    return { state: this.breaker.state, until: this.breaker.until, crashes: this.breaker.recentCrashes };
  }

  /** pid of the ready spare, if any (tests and benchmarks). */
  get sparePid(): number | undefined {
    return this.spare?.alive ? this.spare.pid : undefined;
  }

  /** Resolves when a spare is ready (or cannot be made); for start-up and tests. */
  async spareReady(): Promise<boolean> {
    this.ensureSpare();
    if (this.spareStarting) await this.spareStarting;
    return this.sparePid !== undefined;
  }

  stats(): PoolStats {
    let busy = 0;
    for (const e of this.entries.values()) if (e.session.busy) busy++;
    const live = [...this.entries.values()].filter((e) => e.session.proc.alive).length;
    return {
      processes: live + (this.spare?.alive ? 1 : 0),
      busy,
      scopes: this.entries.size,
      spareReady: !!this.spare?.alive,
      spawns: this.spawns,
      crashes: this.breaker.totalCrashes,
      circuit: this.breaker.state,
      circuitUntil: this.breaker.until,
    };
  }

  /** The scope's live session, if any. */
  session(scope: string): AgentSession | undefined {
    const e = this.entries.get(scope);
    return e?.session.alive ? e.session : undefined;
  }

  /** The scope's session, reused when alive, else opened on the spare or a new process. */
  acquire(scope: string, opts: AcquireOptions): Promise<AgentSession> {
    if (this.closed) return Promise.reject(new PoolClosedError());
    const existing = this.entries.get(scope);
    if (existing?.session.alive) {
      if (opts.hold) existing.session.hold();
      this.touch(existing);
      return Promise.resolve(existing.session);
    }
    if (existing) this.drop(existing);
    const inFlight = this.pending.get(scope);
    if (inFlight) return opts.hold ? inFlight.then((s) => (s.hold(), s)) : inFlight;
    const p = this.open(scope, opts).finally(() => this.pending.delete(scope));
    this.pending.set(scope, p);
    return p;
  }

  private async open(scope: string, opts: AcquireOptions): Promise<AgentSession> {
    this.checkCircuit();
    await this.slot();
    this.starting++;
    let proc: AgentProcess | undefined;
    try {
      const cwd = this.workDir(() => opts.cwd ?? agentCwd(this.o.cwd, opts.channel));
      proc = await this.takeProcess({ channel: opts.channel, cwd, isolation: opts.isolation });
      proc.tags.scope = scope;
      const mcp =
        typeof opts.mcpEnv === "function"
          ? await opts.mcpEnv(this.slotContext(proc, cwd))
          : { transport: "stdio" as const, env: opts.mcpEnv };
      const session = await AgentSession.open(
        proc,
        {
          cwd,
          mcp,
          standingContext: opts.standingContext,
          mode: this.o.mode,
          ...(this.sessionSettings.get(proc) ?? { model: this.o.model, effort: this.o.effort }),
          servedModel: this.o.provider?.model,
          initialMessage: this.o.initialMessage,
          title: opts.title,
          previousSessionId: opts.previousSessionId,
          proxy: this.o.proxy,
          logger: this.log,
        },
        this.limits,
      );
      proc.tags.sessionId = session.sessionId;
      if (this.closed) {
        void proc.close(this.o.closeGraceMs);
        throw new PoolClosedError();
      }
      if (!proc.alive) {
        const exit = proc.exitInfo;
        throw new AgentCrashedError(this.display, exit?.code ?? null, exit?.signal ?? null, proc.stderrTail());
      }
      const entry: Entry = { scope, session };
      // Held before any other acquire waiting for a slot can see the entry as idle.
      if (opts.hold) session.hold();
      session.onTurnEnd = () => this.touch(entry);
      this.entries.set(scope, entry);
      this.watch(entry);
      this.touch(entry);
      return session;
    } catch (err) {
      if (proc?.alive) void proc.close(this.o.closeGraceMs);
      throw err;
    } finally {
      this.starting--;
      this.wake();
    }
  }

  /** What the session's MCP slot is chosen from (AcquireOptions.mcpEnv). */
  private slotContext(proc: AgentProcess, cwd: string): McpSlotContext {
    const st: Started = this.started_.get(proc) ?? { sandboxed: false, network: "host", env: {} };
    return {
      linkDir: this.linkDirs.get(proc),
      endpoint: st.endpoint,
      agentHttp: proc.capabilities.mcpCapabilities?.http === true,
      offline: st.network === "none",
      cwd,
      env: st.env,
      wrap: (server: ServerCommand) => {
        const at = server.cwd ?? cwd;
        const target = st.target;
        if (!st.sandboxed || !target) return { command: server.command, args: server.args, cwd: at };
        const launch = this.o.sandbox!.launch({
          channel: target.channel,
          cwd: target.cwd,
          isolation: target.isolation,
          env: st.env,
          home: st.env.HOME,
          command: server.command,
          chdir: at,
          what: "MCP server command",
        });
        return { command: launch!.command, args: [...launch!.args, server.command, ...server.args], cwd: at, network: launch!.network };
      },
    };
  }

  /** The working directory, created; a failure names the directory and the agent. */
  private workDir(make: () => string): string {
    try {
      return make();
    } catch (err) {
      throw new AgentStartError(this.display, `cannot create its working directory (agent.cwd '${this.o.cwd}'): ${(err as Error).message}`);
    }
  }

  private checkCircuit(): void {
    const err = this.circuitError();
    if (err) throw err;
  }

  /** While the breaker is open: the error a caller gets, saying whether any agent ever started. */
  circuitError(): CircuitOpenError | undefined {
    if (this.breaker.state !== "open") return undefined;
    return new CircuitOpenError(this.display, this.breaker.until!, this.breaker.recentCrashes, {
      neverStarted: this.started === 0,
      onlyStartFailures: this.breaker.onlyStartFailures,
      lastStartFailure: this.lastStartFailure,
    });
  }

  /** Waits for a free process slot, closing the least recently used idle scope if that makes one. */
  private async slot(): Promise<void> {
    while (this.entries.size + this.starting >= this.o.maxConcurrent) {
      if (this.closed) throw new PoolClosedError();
      const idle = [...this.entries.values()].filter((e) => !e.session.busy);
      if (idle.length) {
        const lru = idle.reduce((a, b) => (this.lastUsed(a) <= this.lastUsed(b) ? a : b));
        this.log.info({ evt: "agent.evict", scope: lru.scope, agent_pid: lru.session.proc.pid }, "closing idle agent to make room");
        this.release(lru);
        continue;
      }
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  private readonly usedAt = new WeakMap<Entry, number>();
  private lastUsed(e: Entry): number {
    return this.usedAt.get(e) ?? 0;
  }

  private wake(): void {
    const w = this.waiters.shift();
    w?.();
  }

  /** Which processes can serve a target: "plain" ones serve all, sandboxed ones their channel only. */
  private keyOf(target: Target | undefined): string {
    if (!target || !this.o.sandbox) return PLAIN;
    try {
      return this.o.sandbox.key(target.channel, target.cwd, target.isolation);
    } catch (err) {
      if (err instanceof SandboxError) throw new AgentStartError(this.display, err.message);
      throw err;
    }
  }

  private async takeProcess(target: Target): Promise<AgentProcess> {
    const key = this.keyOf(target);
    if (!this.spare?.alive && this.spareStarting && this.spareStartingKey === key) await this.spareStarting;
    const spare = this.spare;
    if (spare?.alive && this.procKeys.get(spare) === key) {
      this.spare = undefined;
      delete spare.tags.spare;
      this.retarget(target);
      return spare;
    }
    this.retarget(target);
    const proc = await this.spawn(target, false);
    this.ensureSpare();
    return proc;
  }

  /** The next spare serves this channel: a spare made for another one is closed. */
  private retarget(target: Target): void {
    const key = this.keyOf(target);
    // An unsandboxed channel (where channels differ) gets the unbound spare back.
    this.spareTarget = key !== PLAIN ? target : undefined;
    const spare = this.spare;
    if (spare?.alive && this.procKeys.get(spare) !== key) {
      this.spare = undefined;
      this.log.debug(
        { evt: "agent.spare_moved", agent_pid: spare.pid, channel: target.channel.id },
        "the warm spare moves to another channel",
      );
      void spare.close(this.o.closeGraceMs);
    }
    this.ensureSpare();
  }

  /** A directory of the process's own for its session's link socket (see AgentPoolOptions.linkRoot). */
  private makeLinkDir(): string | undefined {
    if (!this.o.linkRoot) return undefined;
    const dir = join(this.o.linkRoot, String(++this.linkSeq));
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  /**
   * Starts an agent process. One whose sandbox failed to set up (bubblewrap's own error,
   * before the agent ran: its loopback setup fails now and then under load) is tried again
   * (retrySandboxSetup: up to 5 tries within 4 s), each such failure logged at warn. A start
   * that fails for good is logged at error and counted by the breaker once, whatever the
   * tries: three in a row open it.
   */
  private async spawn(target: Target | undefined, isSpare: boolean): Promise<AgentProcess> {
    try {
      return await retrySandboxSetup(() => this.spawnOnce(target, isSpare), {
        stderrOf: (err) => (err instanceof AgentStartError ? err.stderrTail : undefined),
        stop: () => this.closed,
        onRetry: (attempt, err, delayMs) => {
          const e = err as AgentStartError;
          this.log.warn(
            {
              evt: "agent.start_failed",
              command: this.display,
              reason: e.reason,
              stderr: e.stderrTail,
              attempt,
              retry_ms: Math.round(delayMs),
            },
            `${e.message.split("\n")[0]}; bubblewrap could not set the sandbox up, trying again`,
          );
        },
      });
    } catch (caught) {
      const err = caught instanceof SandboxError ? new AgentStartError(this.display, caught.message) : caught;
      if (err instanceof AgentStartError) {
        this.lastStartFailure = err.reason;
        this.log.error({ evt: "agent.start_failed", command: this.display, reason: err.reason, stderr: err.stderrTail }, err.message);
        // A command that cannot start would otherwise be retried forever.
        this.breaker.record({ start: true });
      }
      throw err;
    }
  }

  private async spawnOnce(target: Target | undefined, isSpare: boolean): Promise<AgentProcess> {
    await this.breaker.backoff();
    this.checkCircuit();
    if (this.closed) throw new PoolClosedError();
    const environment = (presetEnv: Record<string, string> = {}) =>
      agentEnvironment({
        configured: { ...presetEnv, ...this.o.env },
        secret: this.o.secret,
        hooksAgentEnforced: this.o.hooksAgentEnforced,
        parent: this.o.parentEnv,
        inherit: this.o.preset?.keys,
      });
    let { env, dropped } = environment();
    if (dropped.length)
      this.log.warn({ evt: "agent.env_dropped", names: dropped }, "kept the bridge's secret key out of the agent environment");
    const key = this.keyOf(target);
    const cwd = target?.cwd ?? this.workDir(() => spareCwd(this.o.cwd));
    const linkDir = this.makeLinkDir();
    this.spawns++;
    let endpoint: ProcessEndpoint | undefined;
    try {
      const where = key !== PLAIN ? this.o.sandbox!.effective(target?.isolation) : { sandboxed: false, network: "host" as const };
      endpoint = await this.reserve({ ...where, linkDir });
      const launch =
        target && key !== PLAIN
          ? this.o.sandbox!.launch({
              channel: target.channel,
              cwd,
              linkDir,
              isolation: target.isolation,
              env,
              command: this.o.command,
              // In a network of its own the agent reaches its endpoint through this port only.
              forward: endpoint?.socket ? [{ port: endpoint.port, socket: endpoint.socket }] : undefined,
            })
          : undefined;
      // The preset's files go into the sandbox HOME when there is one: the agent's config lives there.
      const preset = presetSpawn(this.o, launch?.home);
      if (this.o.preset) env = environment(preset.env).env;
      const proc = await AgentProcess.start({
        command: this.o.command,
        args: preset.args,
        cwd,
        env: { ...env, ...launch?.env },
        initTimeoutMs: this.o.initTimeoutMs,
        logger: this.log,
        secretForms: secretForms(this.o.secret),
        authMethod: this.o.authMethod,
        launcher: launch
          ? { command: launch.command, args: launch.args, network: launch.network, hostNetworkArgs: launch.hostNetworkArgs }
          : undefined,
      });
      this.started++;
      this.breaker.started();
      this.procKeys.set(proc, key);
      this.sessionSettings.set(proc, { model: preset.model, effort: preset.effort });
      this.agentHttp = proc.capabilities.mcpCapabilities?.http === true;
      if (endpoint && !this.agentHttp) {
        void endpoint.close();
        endpoint = undefined;
      }
      const held = endpoint;
      this.started_.set(proc, {
        target,
        sandboxed: launch !== undefined,
        network: where.network,
        env: { ...env, ...launch?.env },
        endpoint: held,
      });
      if (held) void proc.exited.then(() => held.close());
      if (linkDir) {
        this.linkDirs.set(proc, linkDir);
        void proc.exited.then(() => rmSync(linkDir, { recursive: true, force: true }));
      }
      this.emit("spawn", { pid: proc.pid, spare: isSpare, sandboxed: launch !== undefined, exited: proc.groupGone });
      return proc;
    } catch (caught) {
      if (linkDir) rmSync(linkDir, { recursive: true, force: true });
      void endpoint?.close();
      throw caught;
    }
  }

  /** The process's endpoint, unless none is wanted; a failure to reserve one leaves the stdio proxy. */
  private async reserve(where: Parameters<NonNullable<AgentPoolOptions["reserveEndpoint"]>>[0]): Promise<ProcessEndpoint | undefined> {
    if (!this.o.reserveEndpoint || this.agentHttp === false) return undefined;
    try {
      return await this.o.reserveEndpoint(where);
    } catch (err) {
      this.log.warn(
        { evt: "agent.endpoint_failed", err: (err as Error).message },
        "could not reserve an MCP endpoint; the session uses the stdio proxy",
      );
      return undefined;
    }
  }

  private ensureSpare(): void {
    if (this.closed || !this.o.warmSpare || this.spare?.alive || this.spareStarting || this.breaker.state === "open") return;
    // Bound to channels: no spare until one is known (see warmFor, retarget).
    const target = this.spareTarget;
    try {
      if (!target && this.o.sandbox?.effective().sandboxed) return;
      this.spareStartingKey = this.keyOf(target);
    } catch (err) {
      this.log.warn({ evt: "agent.spare_failed", err: (err as Error).message }, "could not start the warm spare agent");
      return;
    }
    clearTimeout(this.spareRetry);
    this.spareStarting = Promise.resolve()
      .then(() => {
        try {
          if (!target) this.workDir(() => spareCwd(this.o.cwd));
        } catch (err) {
          this.breaker.record({ start: true }); // a directory that cannot be made must not be retried in a tight loop
          throw err;
        }
        return this.spawn(target, true);
      })
      .then((proc) => {
        if (this.closed) {
          void proc.close(this.o.closeGraceMs);
          return undefined;
        }
        if (this.keyOf(this.spareTarget) !== this.keyOf(target)) {
          // The spare moved to another channel while this one started.
          void proc.close(this.o.closeGraceMs);
          setTimeout(() => this.ensureSpare(), 0);
          return undefined;
        }
        this.spare = proc;
        proc.tags.spare = true;
        proc.once("exit", (info) => {
          if (this.spare === proc) this.spare = undefined;
          if (!info.expected && proc.tags.scope === undefined) this.crashed(proc, undefined);
        });
        this.emit("spare", { pid: proc.pid });
        return proc;
      })
      .catch((err: unknown) => {
        this.log.warn({ evt: "agent.spare_failed", err: String((err as Error).message ?? err) }, "could not start the warm spare agent");
        if (!this.closed) {
          this.spareRetry = setTimeout(() => this.ensureSpare(), Math.max(100, this.breaker.nextSpawnAt - Date.now()));
          this.spareRetry.unref();
        }
        return undefined;
      })
      .finally(() => {
        this.spareStarting = undefined;
        this.spareStartingKey = undefined;
      });
  }

  private crashed(proc: AgentProcess, scope: string | undefined): void {
    const exit = proc.exitInfo!;
    this.breaker.record();
    const info: AgentCrash = { pid: proc.pid, scope, code: exit.code, signal: exit.signal, stderrTail: proc.stderrTail() };
    this.log.error(
      {
        evt: "agent.crash",
        agent_pid: info.pid,
        scope,
        code: exit.code,
        signal: exit.signal,
        stderr: info.stderrTail,
        command: this.display,
      },
      "agent process died",
    );
    this.emit("crash", info);
    if (!this.closed) setTimeout(() => this.ensureSpare(), 0);
  }

  private watch(entry: Entry): void {
    const proc = entry.session.proc;
    proc.once("exit", (info) => {
      this.emit("exit", { pid: proc.pid, scope: entry.scope, ...info });
      if (this.entries.get(entry.scope) === entry) this.drop(entry);
      if (!info.expected) this.crashed(proc, entry.scope);
    });
  }

  private touch(entry: Entry): void {
    this.usedAt.set(entry, Date.now());
    clearTimeout(entry.idleTimer);
    entry.idleTimer = setTimeout(() => {
      if (this.entries.get(entry.scope) !== entry) return;
      if (entry.session.busy) return this.touch(entry);
      this.log.info({ evt: "agent.idle_close", scope: entry.scope, agent_pid: entry.session.proc.pid }, "closing idle agent");
      this.release(entry);
    }, this.o.idleCloseMs);
    entry.idleTimer.unref();
    this.wake();
  }

  /** Forgets an entry (the process is dead or being closed). */
  private drop(entry: Entry): void {
    clearTimeout(entry.idleTimer);
    if (this.entries.get(entry.scope) === entry) this.entries.delete(entry.scope);
    entry.session.detach();
    this.wake();
  }

  private release(entry: Entry): Promise<unknown> {
    this.drop(entry);
    return entry.session.proc.close(this.o.closeGraceMs);
  }

  /** `!cancel`: cancels the scope's running turn; false when none was running. */
  cancel(scope: string, why: "owner" | "shutdown" = "owner"): boolean {
    return this.entries.get(scope)?.session.cancel(why) ?? false;
  }

  /**
   * Ends the scope's session (its process is closed); the next acquire starts fresh.
   * `reason`: `owner` (`!rotate`), `max_turns` (agent.max_turns_per_session), or the stop
   * reason that forced it (`max_tokens`, `max_turn_requests`).
   */
  async rotate(scope: string, reason = "owner"): Promise<boolean> {
    const entry = this.entries.get(scope);
    if (!entry) return false;
    this.log.info(
      { evt: "agent.rotate", scope, sessionId: entry.session.sessionId, reason, turns: entry.session.turns },
      "session rotated",
    );
    this.emit("rotate", { scope, reason });
    await this.release(entry);
    return true;
  }

  /** Every live agent process, for the status page: its scope and session, or the warm spare. */
  processes(): Array<{ pid: number; scope?: string; session?: AgentSession; spare: boolean }> {
    const list: Array<{ pid: number; scope?: string; session?: AgentSession; spare: boolean }> = [];
    for (const e of this.entries.values())
      if (e.session.proc.alive) list.push({ pid: e.session.proc.pid, scope: e.scope, session: e.session, spare: false });
    if (this.spare?.alive) list.push({ pid: this.spare.pid, spare: true });
    return list;
  }

  /** Kills everything: stdin end, grace, SIGTERM, SIGKILL on each process group. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.spareRetry);
    this.breaker.dispose();
    for (const w of this.waiters.splice(0)) w();
    const procs: Array<Promise<unknown>> = [];
    for (const entry of [...this.entries.values()]) procs.push(this.release(entry));
    const spare = this.spare ?? (await this.spareStarting);
    if (spare) procs.push(spare.close(this.o.closeGraceMs));
    this.spare = undefined;
    await Promise.all(procs);
  }
}
