/**
 * One agent process speaking ACP over stdio: spawn in its own process group, the ACP
 * `initialize` handshake (protocol v1, client capabilities honest: no fs, no terminal),
 * routing of `session/update` and `session/request_permission` to the session that owns
 * them, stderr to the log line by line, and a stop that escalates (stdin end, grace,
 * SIGTERM, SIGKILL on the group).
 *
 * Start failures become an AgentStartError naming the command: not found, exits at once,
 * non-JSON on stdout before the handshake (usually a CLI that is not an ACP agent), no
 * answer to `initialize` in time, or an unsupported protocol version.
 */
import { steeringAdvertised } from "./steering.js";
import { spawn, type ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import { Readable, Writable } from "node:stream";
import type * as acp from "@agentclientprotocol/sdk/unstable";
import { acpSdk, loadAcpSdk } from "./acp-sdk.js";
import type { Logger } from "../base/log.js";
import { PROXY_LINE_EVT, proxyLogLine, scrub, silentLogger } from "../base/log.js";
import { LogThrottle, type LogThrottleOptions } from "../base/log-throttle.js";
import { AgentStartError, describeCause } from "./errors.js";
import { scrubSecret } from "./env.js";
import { eachLine, watchJsonLines } from "./stdio.js";
import { spawnWithPrivateNetwork, type PrivateNetwork } from "./sandbox-net.js";
import { sleep } from "../base/backoff.js";

/** Receives what the agent sends for one session; implemented by AgentSession. */
export interface SessionRoute {
  onUpdate(notification: acp.SessionNotification): void;
  onPermission(request: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse>;
  onElicitation(request: acp.CreateElicitationRequest, signal: AbortSignal): Promise<acp.CreateElicitationResponse>;
}

export interface AgentProcessOptions {
  command: string;
  args?: string[];
  /** Absolute working directory of the process (created by the caller). */
  cwd: string;
  /** The complete environment (see agentEnvironment); nothing else is inherited. */
  env: Record<string, string>;
  /** How long `initialize` may take; default 30 s (claude-agent-acp needs ~1 s, gemini ~3 s). */
  initTimeoutMs?: number;
  logger?: Logger;
  /** Secret spellings to mask in stderr lines and tails, besides nsec-shaped text. */
  secretForms?: string[];
  /** stderr lines kept for crash reports; default 30. */
  stderrTailLines?: number;
  /** Log level for the agent's stderr lines; default "info" (it is what an operator needs on a crash). */
  stderrLevel?: "debug" | "info" | "warn";
  /**
   * Bound on the agent's stderr in the log, per process: plain lines (`agent.stderr`) and
   * each kind of proxy line passed through it. Default 100 a minute per kind; what a
   * window holds back is counted in one `agent.stderr_suppressed` line when it ends.
   */
  stderrLogLimit?: LogThrottleOptions;
  /** `agent.auth_method`: ACP `authenticate` with this method after `initialize` (codex-acp needs "api-key"). */
  authMethod?: string;
  /**
   * Runs the agent through this (the sandbox: `bwrap <args> -- command args`); errors still
   * name the agent command. With `network`, the sandbox gets its private network first
   * (sandbox-net.ts).
   */
  launcher?: { command: string; args: string[]; network?: PrivateNetwork; hostNetworkArgs?: string[] };
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when the bridge stopped it (close/kill), false for a crash. */
  expected: boolean;
}

const ACP_PROTOCOL_VERSION = 1;
/** How long what an exited agent left in its group gets after SIGTERM before SIGKILL. */
const GROUP_GRACE_MS = 2000;

const groupAlive = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Stops what is left of an exited agent's process group. A launcher that runs the real agent as
 * its child and is stopped alone (codex-acp's npm launcher uses spawnSync) would otherwise
 * leave that child running with nobody reading its output. The group id stays taken while any
 * member lives, so the signal reaches only the agent's own processes.
 */
async function stopGroup(pgid: number, graceMs: number, log: Logger): Promise<void> {
  if (!groupAlive(pgid)) return;
  try {
    process.kill(-pgid, "SIGTERM");
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (groupAlive(pgid) && Date.now() < deadline) await sleep(50);
  let signal = "SIGTERM";
  if (groupAlive(pgid)) {
    signal = "SIGKILL";
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  // Usually the session's MCP proxy, a moment from exiting by itself; one that needed SIGKILL is worth a look.
  const line = { evt: "agent.group_stopped", pgid, signal };
  if (signal === "SIGKILL") log.warn(line, "killed what the agent left running in its process group");
  else log.debug(line, "stopped what the agent left running in its process group");
}
const DEFAULT_INIT_TIMEOUT = 30_000;

/** What an AgentProcess emits, checked by tsc on emit/on/once/off. */
export interface AgentProcessEvents {
  /** Once, when the process has exited. */
  exit: [info: ExitInfo];
}

export class AgentProcess extends EventEmitter<AgentProcessEvents> {
  readonly routes = new Map<string, SessionRoute>();
  /** Tags added to every log line of this process (scope, sessionId), set by the pool. */
  readonly tags: Record<string, unknown> = {};
  agentInfo: acp.Implementation | undefined;
  capabilities: acp.AgentCapabilities = {};
  authMethods: acp.AuthMethod[] = [];
  /** The agent advertised native steering (`_session/steering`, see ./steering.ts) at initialize. */
  steering = false;
  exitInfo: ExitInfo | undefined;
  readonly exited: Promise<ExitInfo>;
  /**
   * Settles once the agent's whole process group is gone: what it started and left behind
   * (a launcher's child, a shell) is stopped when the agent itself exits.
   */
  readonly groupGone: Promise<void>;
  readonly displayCommand: string;
  private expectedExit = false;
  private initialized = false;
  private readonly tail: string[] = [];
  /** stderr lines kept in `tail` so far, all told: a turn marks where its own lines begin. */
  private tailCount = 0;
  private connection!: acp.ClientConnection;
  private readonly log: Logger;

  private constructor(
    readonly child: ChildProcess,
    private readonly opts: AgentProcessOptions,
  ) {
    super();
    this.displayCommand = [opts.command, ...(opts.args ?? [])].join(" ");
    this.log = opts.logger ?? silentLogger();
    // Later 'error' events (a failed kill, a broken pipe) must never become uncaught exceptions.
    child.on("error", (err) =>
      this.log.debug({ evt: "agent.process_error", agent_pid: child.pid, err: err.message }, "agent process error"),
    );
    this.exited = new Promise((resolveExit) => {
      child.once("exit", (code, signal) => {
        this.exitInfo = { code, signal, expected: this.expectedExit };
        resolveExit(this.exitInfo);
        this.emit("exit", this.exitInfo);
      });
    });
    this.groupGone = this.exited.then(() => (child.pid === undefined ? undefined : stopGroup(child.pid, GROUP_GRACE_MS, this.log)));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.exitInfo === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The agent side of the connection, for session requests. */
  get agent(): acp.ClientContext {
    return this.connection.agent;
  }

  /**
   * After a request failed: true when the process is dead or dying (the connection is
   * closed and the exit follows; under load that can take a while, so wait up to
   * `waitMs`, then make sure with SIGKILL). False when the process is alive and connected:
   * the failure was the agent's answer, not a death.
   */
  async lost(waitMs = 5000): Promise<boolean> {
    if (!this.alive) return true;
    if (!this.connection?.signal.aborted) return this.exitsWithin(100);
    if (await this.exitsWithin(waitMs)) return true;
    // It closed its stdout without exiting: a crash all the same, not a stop we asked for.
    this.kill("SIGKILL", false);
    await this.exited;
    return true;
  }

  /** Last stderr lines, scrubbed. */
  stderrTail(): string {
    return this.tail.join("\n");
  }

  /** A mark for `stderrSince`. */
  stderrMark(): number {
    return this.tailCount;
  }

  /** The stderr lines (of the last kept) written since `mark`, scrubbed. */
  stderrSince(mark: number): string {
    const n = Math.min(this.tail.length, this.tailCount - mark);
    return n > 0 ? this.tail.slice(this.tail.length - n).join("\n") : "";
  }

  /** Spawns the agent and completes `initialize`; rejects with AgentStartError. */
  static async start(opts: AgentProcessOptions): Promise<AgentProcess> {
    await loadAcpSdk();
    const argv = [opts.command, ...(opts.args ?? [])];
    const command = opts.launcher?.command ?? opts.command;
    const args = opts.launcher ? [...opts.launcher.args, ...argv] : argv.slice(1);
    // Own process group, so a kill reaches the agent's children (MCP proxy, shells) too.
    const spawnOpts = { cwd: opts.cwd, env: opts.env, detached: true };
    const plain = (a: string[]) => spawn(command, a, { ...spawnOpts, stdio: ["pipe", "pipe", "pipe"] });
    const launcher = opts.launcher;
    let child: ChildProcess;
    if (launcher?.network) {
      const launched = spawnWithPrivateNetwork(command, args, launcher.network, spawnOpts);
      try {
        await launched.ready;
        child = launched.child;
      } catch (err) {
        // The whole group: bubblewrap's inner process waits on its --block-fd with a copy of
        // the FIFO open for writing, so it never sees end-of-file, and --die-with-parent does
        // not reach it on every kernel (gVisor) once the outer bubblewrap is gone.
        killGroup(launched.child, "SIGKILL");
        if (!launcher.hostNetworkArgs) throw new AgentStartError(argv.join(" "), (err as Error).message);
        // The sandbox still holds; only its network is the host's, loopback included.
        opts.logger?.warn(
          { evt: "agent.sandbox", state: "host-network", reason: (err as Error).message },
          `slirp4netns could not give the agent's sandbox a network of its own (${(err as Error).message}); it runs on the host's network`,
        );
        child = plain([...launcher.hostNetworkArgs, ...argv]);
      }
    } else child = plain(args);
    const proc = new AgentProcess(child, opts);
    try {
      await proc.handshake();
      if (opts.authMethod) await proc.authenticate(opts.authMethod);
    } catch (err) {
      proc.kill();
      throw err;
    }
    return proc;
  }

  /** ACP `authenticate`, refused early with the methods the agent does offer. */
  private async authenticate(methodId: string): Promise<void> {
    if (!this.authMethods.some((m) => m.id === methodId)) {
      const offered = this.authMethods.map((m) => m.id);
      throw this.startError(
        `does not offer auth method '${methodId}' (agent.auth_method); it offers: ${offered.length ? offered.join(", ") : "none"}`,
      );
    }
    try {
      await this.agent.request(acpSdk().methods.agent.authenticate, { methodId });
    } catch (err) {
      throw this.startError(`refused authenticate with '${methodId}': ${describeCause(err)}`);
    }
    this.log.info({ evt: "agent.authenticated", agent_pid: this.pid, method: methodId }, "agent authenticated");
  }

  private startError(reason: string): AgentStartError {
    return new AgentStartError(this.displayCommand, reason, this.stderrTail());
  }

  private handshake(): Promise<void> {
    const { child } = this;
    const timeoutMs = this.opts.initTimeoutMs ?? DEFAULT_INIT_TIMEOUT;
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (err?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const timer = setTimeout(
        () =>
          settle(
            this.startError(
              `did not answer ACP initialize within ${Math.round(timeoutMs / 1000)}s; is it an ACP agent (some need a flag such as --acp)?`,
            ),
          ),
        timeoutMs,
      );
      child.once("error", (err: NodeJS.ErrnoException) => {
        const reason =
          err.code === "ENOENT"
            ? `command not found (ENOENT): check agent.command and PATH`
            : err.code === "EACCES"
              ? `command is not executable (EACCES)`
              : `could not be spawned: ${err.message}`;
        settle(this.startError(reason));
      });
      child.once("exit", (code, signal) => {
        // Give stderr a moment to drain so the tail explains the exit.
        setTimeout(
          () =>
            settle(
              this.startError(
                signal
                  ? `was killed by ${signal} before answering initialize`
                  : `exited at once (code ${code}) before answering initialize`,
              ),
            ),
          50,
        );
      });
      this.wireStderr();
      const stdout = this.guardStdout((line) =>
        settle(
          this.startError(
            `printed non-JSON on stdout ("${line.slice(0, 120)}"); ACP needs JSON-RPC lines on stdout: is this an ACP agent?`,
          ),
        ),
      );
      child.stdin!.on("error", () => {
        // EPIPE when the agent dies; the exit handler reports it.
      });
      if (child.pid === undefined) return; // spawn failed; 'error' follows
      this.connect(stdout);
      this.agent
        .request(acpSdk().methods.agent.initialize, {
          protocolVersion: ACP_PROTOCOL_VERSION,
          clientCapabilities: {
            fs: { readTextFile: false, writeTextFile: false },
            terminal: false,
            session: { compaction: {} },
            // Questions back to people as cards in the thread (turn/questions.ts); Claude enables AskUserQuestion on it.
            elicitation: { form: {} },
          },
          clientInfo: { name: "buzz-bridge", version: "0.1.0" },
        })
        .then((init) => {
          if (init.protocolVersion !== ACP_PROTOCOL_VERSION) {
            settle(
              this.startError(
                `answered with ACP protocol version ${init.protocolVersion}; buzz-bridge speaks version ${ACP_PROTOCOL_VERSION}`,
              ),
            );
            return;
          }
          this.agentInfo = init.agentInfo ?? undefined;
          this.capabilities = init.agentCapabilities ?? {};
          this.authMethods = init.authMethods ?? [];
          this.steering = steeringAdvertised(init);
          this.initialized = true;
          this.log.info(
            {
              evt: "agent.initialized",
              agent_pid: this.pid,
              agent: this.agentInfo,
              capabilities: this.capabilities,
              steering: this.steering,
            },
            "agent initialized",
          );
          settle();
        })
        .catch(async (err: unknown) => {
          // A closed connection usually means the process is exiting: let the exit explain it.
          if (await this.exitsWithin(300)) return;
          settle(this.startError(`refused initialize: ${describeCause(err)}`));
        });
    });
  }

  private wireStderr(): void {
    const max = this.opts.stderrTailLines ?? 30;
    const level = this.opts.stderrLevel ?? "info";
    // An agent (or a server whose output it passes on) can write without end; the log
    // and the memory behind it must not grow with it.
    const throttle = new LogThrottle(this.log, { perWindow: 100, summaryEvt: "agent.stderr_suppressed", ...this.opts.stderrLogLimit });
    eachLine(this.child.stderr!, (raw, cut) => {
      const line = scrubSecret(scrub(raw), this.opts.secretForms ?? []);
      if (!line.trim()) return;
      this.tail.push(line.slice(0, 2000));
      this.tailCount++;
      if (this.tail.length > max) this.tail.shift();
      // The proxy's lines (or what claims to be one) are logged under the daemon's own
      // `proxy.log`, one throttle key for all of them: the agent chooses their `evt`s.
      const proxy = cut ? undefined : proxyLogLine(line);
      if (proxy) throttle.log(proxy.level, PROXY_LINE_EVT, { ...proxy.fields, agent_pid: this.pid, ...this.tags }, proxy.msg);
      else
        throttle.log(
          level,
          "agent.stderr",
          { evt: "agent.stderr", agent_pid: this.pid, ...this.tags, line, ...(cut ? { cut_at: line.length } : {}) },
          "agent stderr",
        );
    });
  }

  /** stdout, watched for non-JSON lines: fatal before the handshake, one warning after. */
  private guardStdout(onBadLineBeforeInit: (line: string) => void): Readable {
    let warned = false;
    const guard = watchJsonLines(
      (raw) => {
        const line = scrubSecret(scrub(raw), this.opts.secretForms ?? []);
        if (!this.initialized) onBadLineBeforeInit(line);
        else if (!warned) {
          warned = true;
          this.log.warn(
            { evt: "agent.stdout_noise", agent_pid: this.pid, ...this.tags, line: line.slice(0, 200) },
            "agent wrote non-JSON on stdout (ignored)",
          );
        }
      },
      () => !this.initialized,
    );
    return this.child.stdout!.pipe(guard);
  }

  private connect(stdout: Readable): void {
    const sdk = acpSdk();
    const stream = sdk.ndJsonStream(
      Writable.toWeb(this.child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(stdout) as ReadableStream<Uint8Array>,
    );
    const app = sdk
      .client({ name: "buzz-bridge" })
      .onNotification(sdk.methods.client.session.update, ({ params }) => {
        const route = this.routes.get(params.sessionId);
        if (route) route.onUpdate(params);
        else
          this.log.debug(
            { evt: "agent.update_unrouted", agent_pid: this.pid, sessionId: params.sessionId },
            "update for no active session",
          );
      })
      .onRequest(sdk.methods.client.session.requestPermission, ({ params, signal }) => {
        const route = this.routes.get(params.sessionId);
        if (!route) return { outcome: { outcome: "cancelled" } };
        return route.onPermission(params, signal);
      })
      .onRequest(sdk.methods.client.elicitation.create, ({ params, signal }) => {
        const sessionId = "sessionId" in params ? params.sessionId : undefined;
        const route = typeof sessionId === "string" ? this.routes.get(sessionId) : undefined;
        if (!route) return { action: "cancel" };
        return route.onElicitation(params, signal);
      })
      // We advertised no fs and no terminal; anything else is not ours to serve.
      .onRequest("*", ({ method }) => {
        throw sdk.RequestError.methodNotFound(method);
      })
      .onNotification("*", ({ method }) => {
        this.log.debug({ evt: "agent.notification", agent_pid: this.pid, method }, "vendor notification ignored");
      });
    this.connection = app.connect(stream);
  }

  /** Kills the whole process group (default SIGKILL); `expected` marks the exit as the bridge's doing, not a crash. */
  kill(signal: NodeJS.Signals = "SIGKILL", expected = true): void {
    if (expected) this.expectedExit = true;
    if (!this.alive) return;
    killGroup(this.child, signal);
  }

  /**
   * Stops the agent politely: end stdin (most agents exit on EOF), wait `graceMs`, then
   * SIGTERM the group, wait again, then SIGKILL. Resolves when the process has exited.
   */
  async close(graceMs = 2000): Promise<ExitInfo> {
    this.expectedExit = true;
    if (this.alive) {
      try {
        this.connection?.close();
      } catch {
        // closing a dead connection
      }
      this.child.stdin?.end();
      if (!(await this.exitsWithin(graceMs))) {
        this.kill("SIGTERM");
        if (!(await this.exitsWithin(graceMs))) this.kill("SIGKILL");
      }
    }
    await this.groupGone;
    return this.exited;
  }

  private async exitsWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
    const done = await Promise.race([this.exited.then(() => true as const), timeout]);
    clearTimeout(timer);
    return done;
  }
}

/** Signals `child`'s process group (it was spawned detached, as its leader), else the child alone. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}
