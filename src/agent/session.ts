/**
 * One ACP session on an agent process: `session/new` (or resume/load of a previous
 * session) with exactly one MCP server named `buzz` — the bridge's stdio proxy, or the
 * daemon's own endpoint over HTTP for an agent that speaks MCP over HTTP — the
 * standing context as an `append` system prompt when the agent supports it, the
 * configured session mode, and turns (see TurnControl).
 */
import type * as acp from "@agentclientprotocol/sdk/unstable";
import { acpSdk } from "./acp-sdk.js";
import type { Logger } from "../base/log.js";
import { silentLogger } from "../base/log.js";
import { cliPath } from "../base/cli-path.js";
import { PROXY_SERVER_NAME, PROXY_SUBCOMMAND } from "../contract/proxy-entry.js";
import { AgentCrashedError, AgentModeError, AgentProtocolError, TurnInProgressError } from "./errors.js";
import type { AgentProcess } from "./process.js";
import { applySessionSettings, currentModel, type SessionSetup } from "./session-settings.js";
import { TurnControl, type PromptOptions, type TurnLimits, type TurnResult } from "./turn-control.js";
import { addUsage, SessionUsage, type TurnUsage } from "./usage.js";
import { readSteerAnswer, steerRequest, STEER_METHOD, type SteerAnswer } from "./steering.js";

/** How long a `_session/steering` request may go unanswered before it counts as ambiguous. */
const STEER_ANSWER_TIMEOUT_MS = 10_000;

/**
 * The session's one MCP slot as `session/new` gets it: the stdio proxy (`buzz-bridge mcp-proxy`)
 * with this environment, or the daemon's own endpoint over Streamable HTTP.
 */
export type McpSlot =
  | { transport: "stdio"; env: Record<string, string> }
  | { transport: "http"; url: string; headers: Record<string, string> };

export interface ProxyCommand {
  command: string;
  args: string[];
}

/**
 * Node flags for the proxy, one process per agent session. V8 lets the young generation
 * grow to two 16 MiB semi-spaces and keeps them; the proxy handles small messages and
 * retains almost nothing, so 1 MiB makes each session's proxy about 11 MiB smaller and
 * keeps its allocation area in cache (bench figure 1 runs the proxy with these flags).
 */
export const PROXY_NODE_FLAGS = ["--max-semi-space-size=1"];

/** `node <flags> <dist>/cli.js mcp-proxy`, found relative to this module (also when run from src/ via tsx). */
function defaultProxyCommand(): ProxyCommand {
  return { command: process.execPath, args: [...PROXY_NODE_FLAGS, cliPath(), PROXY_SUBCOMMAND] };
}

export interface SessionOptions {
  /** Absolute working directory for the session (see agentCwd). */
  cwd: string;
  /** The session's one MCP slot: the stdio proxy (with the link address and token in its env) or the daemon's HTTP endpoint. */
  mcp: McpSlot;
  /** Base prompt, persona, team instructions, channel: sent once per session. */
  standingContext?: string;
  /** `agent.mode`: selected with session/set_mode after session/new. */
  mode?: string;
  /** `agent.model` / `agent.effort`: selected after session/new (see session-settings.ts). */
  model?: string;
  effort?: string;
  /**
   * `agent.provider.model`: the model the provider serves, whatever alias the agent shows for
   * it (Claude's "opus" maps to it). It is the session's model in logs, status and usage, and
   * the agent's own cost figure — priced from its vendor's table by that alias — is dropped.
   */
  servedModel?: string;
  /** `agent.initial_message`: a brand-new session's first prompt, before the first turn's own. */
  initialMessage?: string;
  /** A title for the session: `session/set_title` when offered, else `_meta.sessionTitle` on session/new. */
  title?: string;
  /** A session id from before a restart: resumed (session/resume) or loaded (session/load) when supported. */
  previousSessionId?: string;
  /** Overrides the proxy command (tests, debugging); default `defaultProxyCommand()`. */
  proxy?: ProxyCommand;
  logger?: Logger;
}

/** How the standing context reached the agent. */
export type StandingContextVia = "system_prompt" | "prompt" | "none";

/** ACP's `{ name, value }` list, for an env or the HTTP headers. */
const toEnvList = (env: Record<string, string>) => Object.entries(env).map(([name, value]) => ({ name, value }));

export class AgentSession {
  /** True until the first prompt when the standing context must go into it (see withStandingContext). */
  standingContextPending: boolean;
  private turn: TurnControl | undefined;
  /** Callers using the session between its prompts (a turn building its prompt, gates, its fallback reply). */
  private holds = 0;
  private closed = false;
  turns = 0;
  /** The model the session runs, when the agent says (usage is counted per model). */
  model: string | undefined;
  /** The agent's cost figure cannot be trusted (a provider's model it does not know): reported as unknown. */
  costUnknown = false;
  /** The running turn's state (last activity, for the status page); undefined when idle. */
  get current(): TurnControl | undefined {
    return this.turn;
  }
  private readonly usage = new SessionUsage();
  private initialPending: string | undefined;
  /** Set by the pool: called after every turn (success or failure), for idle accounting. */
  onTurnEnd: (() => void) | undefined;

  private constructor(
    readonly proc: AgentProcess,
    readonly sessionId: string,
    readonly standingContextVia: StandingContextVia,
    readonly resumed: boolean,
    private readonly standingContext: string,
    private readonly limits: TurnLimits,
    private readonly log: Logger,
    initialMessage: string | undefined,
  ) {
    this.standingContextPending = standingContextVia === "prompt";
    this.initialPending = resumed ? undefined : initialMessage || undefined;
    proc.routes.set(sessionId, {
      onUpdate: (n) => this.turn?.onUpdate(n),
      onPermission: (req, signal) =>
        this.turn ? this.turn.onPermission(req, signal) : Promise.resolve({ outcome: { outcome: "cancelled" } }),
      onElicitation: (req, signal) => (this.turn ? this.turn.onElicitation(req, signal) : Promise.resolve({ action: "cancel" })),
    });
  }

  static async open(proc: AgentProcess, opts: SessionOptions, limits: TurnLimits): Promise<AgentSession> {
    const log = opts.logger ?? silentLogger();
    const proxy = opts.proxy ?? defaultProxyCommand();
    const slot = opts.mcp;
    const mcpServers: acp.McpServer[] = [
      slot.transport === "http"
        ? { type: "http", name: PROXY_SERVER_NAME, url: slot.url, headers: toEnvList(slot.headers) }
        : { name: PROXY_SERVER_NAME, command: proxy.command, args: proxy.args, env: toEnvList(slot.env) },
    ];
    const standing = opts.standingContext?.trim() ?? "";
    const caps = proc.capabilities;
    const systemPrompt: acp.SystemPrompt | undefined =
      standing && caps.sessionCapabilities?.systemPrompt ? { mode: "append", content: [{ type: "text", text: standing }] } : undefined;
    const via: StandingContextVia = !standing ? "none" : systemPrompt ? "system_prompt" : "prompt";
    const guard = async <T>(step: string, run: () => Promise<T>): Promise<T> => {
      try {
        return await run();
      } catch (err) {
        if (await proc.lost()) {
          throw new AgentCrashedError(proc.displayCommand, proc.exitInfo?.code ?? null, proc.exitInfo?.signal ?? null, proc.stderrTail());
        }
        throw new AgentProtocolError(proc.displayCommand, step, err);
      }
    };

    let sessionId: string | undefined;
    let modes: acp.SessionModeState | null | undefined;
    let setup: SessionSetup = {};
    let resumed = false;
    if (opts.previousSessionId) {
      const prev = opts.previousSessionId;
      try {
        if (caps.sessionCapabilities?.resume) {
          const res = await proc.agent.request(acpSdk().methods.agent.session.resume, {
            sessionId: prev,
            cwd: opts.cwd,
            mcpServers,
            ...(systemPrompt ? { systemPrompt } : {}),
          });
          modes = res.modes;
          setup = res;
          sessionId = prev;
        } else if (caps.loadSession) {
          // The agent replays history as updates; no route exists yet, so they are dropped.
          const res = await proc.agent.request(acpSdk().methods.agent.session.load, {
            sessionId: prev,
            cwd: opts.cwd,
            mcpServers,
            ...(systemPrompt ? { systemPrompt } : {}),
          });
          modes = res?.modes;
          setup = res ?? {};
          sessionId = prev;
        }
        resumed = sessionId !== undefined;
      } catch (err) {
        log.warn(
          { evt: "agent.session_resume_failed", sessionId: prev, err: String(err) },
          "could not reopen the previous session; starting a new one",
        );
      }
    }
    const titleByRequest = !!opts.title && !!caps.sessionCapabilities?.title;
    if (!sessionId) {
      // Agents that cannot be asked to set a title may still read it from _meta (the Rust bridge's way).
      const meta = opts.title && !titleByRequest ? { _meta: { sessionTitle: opts.title } } : {};
      const res = await guard("session/new", () =>
        proc.agent.request(acpSdk().methods.agent.session.new, {
          cwd: opts.cwd,
          mcpServers,
          ...(systemPrompt ? { systemPrompt } : {}),
          ...meta,
        }),
      );
      sessionId = res.sessionId;
      modes = res.modes;
      setup = res;
    }
    if (opts.mode) {
      const available = modes?.availableModes.map((m) => m.id) ?? [];
      if (!available.includes(opts.mode)) throw new AgentModeError(proc.displayCommand, opts.mode, available);
      if (modes?.currentModeId !== opts.mode) {
        const id = sessionId;
        await guard("session/set_mode", () =>
          proc.agent.request(acpSdk().methods.agent.session.setMode, { sessionId: id, modeId: opts.mode! }),
        );
      }
    }
    const id = sessionId;
    const applied = await applySessionSettings(proc, id, setup, { model: opts.model, effort: opts.effort }, guard);
    if (titleByRequest) {
      await guard("session/set_title", () =>
        proc.agent.request(acpSdk().methods.agent.session.setTitle, { sessionId: id, title: opts.title! }),
      );
    }
    const shown = applied.model ?? currentModel(setup);
    const model = opts.servedModel ?? shown;
    log.info(
      {
        evt: "agent.session_open",
        agent_pid: proc.pid,
        sessionId,
        resumed,
        mcp: slot.transport,
        standing_context: via,
        mode: opts.mode,
        model,
        agent_model: shown !== model ? shown : undefined,
        effort: applied.effort,
        title: opts.title ? (titleByRequest ? "set_title" : "meta") : undefined,
      },
      "agent session open",
    );
    // A resumed session already had its standing context in its first prompt.
    const session = new AgentSession(
      proc,
      sessionId,
      resumed && via === "prompt" ? "none" : via,
      resumed,
      standing,
      limits,
      log,
      opts.initialMessage,
    );
    session.model = model;
    session.costUnknown = opts.servedModel !== undefined;
    return session;
  }

  get alive(): boolean {
    return !this.closed && this.proc.alive;
  }

  /** What the agent takes in a prompt besides text (ACP promptCapabilities), for attachments. */
  get media(): { image: boolean; embeddedContext: boolean } {
    const caps = this.proc.capabilities.promptCapabilities;
    return { image: caps?.image === true, embeddedContext: caps?.embeddedContext === true };
  }

  /** A prompt runs, or a caller holds the session for a turn (hold()): the pool neither evicts nor idle-closes it. */
  get busy(): boolean {
    return this.turn !== undefined || this.holds > 0;
  }

  /**
   * Marks the session in use by a turn until unhold(): between acquire and the first
   * prompt, and between a turn's prompts, the session is not idle, so the pool must not
   * close it to make room for another scope (the turn would fail with its agent gone).
   */
  hold(): void {
    this.holds++;
  }

  /** Ends one hold(); with none left and no prompt running, the session is idle again. */
  unhold(): void {
    if (this.holds > 0) this.holds--;
    if (!this.busy) this.onTurnEnd?.();
  }

  /**
   * The blocks with the standing context in front when it has to travel in the first
   * prompt (the agent has no `systemPrompt` support); otherwise the blocks unchanged.
   */
  withStandingContext(blocks: acp.ContentBlock[]): acp.ContentBlock[] {
    if (!this.standingContextPending) return blocks;
    return [{ type: "text", text: this.standingContext }, ...blocks];
  }

  /**
   * Runs one turn. Rejects with AgentCrashedError when the process dies mid-turn.
   *
   * In a brand-new session the first call sends `initialMessage` first, as a prompt of
   * its own (same limits, same permission handling), then `blocks`; the result is the
   * second prompt's, with both prompts' usage added. A cancelled or failed initial prompt
   * ends the call there, and it is not sent again.
   */
  async prompt(blocks: acp.ContentBlock[], opts: PromptOptions = {}): Promise<TurnResult & { turnUsage?: TurnUsage }> {
    if (this.turn) throw new TurnInProgressError(this.sessionId);
    const initial = this.initialPending;
    this.initialPending = undefined;
    if (initial) {
      const first = await this.promptOnce([{ type: "text", text: initial }], opts, true);
      if (first.stopReason === "cancelled" || first.killed || first.timedOut) return first;
      const second = await this.promptOnce(blocks, opts, false);
      return { ...second, turnUsage: addUsage(first.turnUsage, second.turnUsage) };
    }
    return this.promptOnce(blocks, opts, false);
  }

  private async promptOnce(
    blocks: acp.ContentBlock[],
    opts: PromptOptions,
    initial: boolean,
  ): Promise<TurnResult & { turnUsage?: TurnUsage }> {
    if (this.turn) throw new TurnInProgressError(this.sessionId);
    if (!this.alive) {
      const exit = this.proc.exitInfo;
      throw new AgentCrashedError(this.proc.displayCommand, exit?.code ?? null, exit?.signal ?? null, this.proc.stderrTail());
    }
    const turn = new TurnControl(this.proc, this.sessionId, this.limits, opts, this.log);
    this.turn = turn;
    this.standingContextPending = false;
    this.turns++;
    const started = Date.now();
    this.log.debug({ evt: "agent.turn_start", sessionId: this.sessionId, agent_pid: this.proc.pid }, "prompt sent");
    try {
      const result = await turn.run(blocks);
      const counted = this.usage.of(result);
      const turnUsage = counted && this.costUnknown ? { ...counted, cost: undefined } : counted;
      this.log.info(
        {
          evt: "agent.turn_end",
          sessionId: this.sessionId,
          agent_pid: this.proc.pid,
          stop: result.stopReason,
          ms: Date.now() - started,
          tool_calls: result.toolCalls,
          timed_out: result.timedOut,
          cancelled_by: result.cancelledBy,
          killed: result.killed,
          initial_message: initial || undefined,
          model: this.model,
          usage: turnUsage,
        },
        "turn ended",
      );
      return turnUsage ? { ...result, turnUsage } : result;
    } finally {
      this.turn = undefined;
      this.onTurnEnd?.();
    }
  }

  /** Pauses the running turn's idle timeout until the returned release is called. */
  holdIdle(): () => void {
    return this.turn?.holdIdle() ?? (() => undefined);
  }

  /** Cancels the running turn (`!cancel`, or the daemon shutting down); false when no turn was running. */
  cancel(why: "owner" | "shutdown" = "owner"): boolean {
    if (!this.turn) return false;
    this.turn.stop(why);
    return true;
  }

  /** Updates of the running turn so far (0 when none runs). */
  get updatesSoFar(): number {
    return this.turn?.state.updates ?? 0;
  }

  /** The agent advertised native steering at initialize. */
  get steerable(): boolean {
    return this.proc.steering;
  }

  /**
   * Native steer (see ./steering.ts): puts the blocks into the running turn. Never throws:
   * an error, a timeout or an odd answer comes back as `refused` or `ambiguous`.
   */
  async steer(blocks: acp.ContentBlock[]): Promise<SteerAnswer> {
    if (!this.turn) return { kind: "no-turn", reason: "no turn is running on this session" };
    if (!this.alive) return { kind: "refused", reason: "the agent process is gone" };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), STEER_ANSWER_TIMEOUT_MS)));
    const request = this.proc.agent.request(STEER_METHOD, steerRequest(this.sessionId, blocks)).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    const settled = await Promise.race([request, timeout]).finally(() => clearTimeout(timer));
    // Unanswered is ambiguous, not refused: the agent may have taken the message after all.
    if (settled === "timeout") return { kind: "ambiguous", reason: `no answer within ${STEER_ANSWER_TIMEOUT_MS / 1000}s` };
    return readSteerAnswer(settled);
  }

  /**
   * Cancels the running turn so the bridge can prompt again with new messages merged in
   * (session/cancel; killed after `cancel_grace` if ignored). False when no turn ran.
   */
  interruptForSteer(): boolean {
    if (!this.turn) return false;
    this.turn.stop("steer");
    return true;
  }

  /** `session/cancel` with no turn of ours running: stops a turn the agent started by itself (a steer it took as a new prompt). */
  cancelStray(): void {
    if (this.turn || !this.alive) return;
    this.proc.agent.notify(acpSdk().methods.agent.session.cancel, { sessionId: this.sessionId }).catch(() => {});
  }

  /** Stops routing this session's traffic (the process is the pool's to close). */
  detach(): void {
    this.closed = true;
    this.turn?.stop("owner");
    this.proc.routes.delete(this.sessionId);
  }
}
