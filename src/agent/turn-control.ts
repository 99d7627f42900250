/**
 * One `session/prompt` under control: updates folded in arrival order, the user's
 * `onUpdate` called strictly one at a time (the SDK runs notification handlers
 * concurrently), `idle_timeout` (reset by any update, paused while a permission
 * question waits for the owner) and `max_turn`. An interrupt sends `session/cancel`,
 * answers open permission requests with `cancelled`, and after `cancel_grace` kills
 * the process if the agent has not stopped.
 */
import type * as acp from "@agentclientprotocol/sdk/unstable";
import { acpSdk } from "./acp-sdk.js";
import type { Logger } from "../base/log.js";
import { AgentCrashedError, AgentProtocolError } from "./errors.js";
import { classifyProviderError } from "./provider-error.js";
import type { AgentProcess } from "./process.js";
import { answer, decidePermission, type AskOwner, type PermissionPolicy } from "./permissions.js";
import { TurnState } from "./turn-state.js";

export interface TurnLimits {
  /** No update for this long → cancel (`agent.idle_timeout`, default 15 min). */
  idleTimeoutMs: number;
  /** Whole turn bound (`agent.max_turn`, default 2 h). */
  maxTurnMs: number;
  /** After session/cancel, how long the agent gets to stop before it is killed (`agent.cancel_grace`, default 5 s). */
  cancelGraceMs: number;
  permissions: PermissionPolicy;
  /** Bound on an owner's answer (`agent.permission_timeout`, default 10 min); a timeout denies. */
  permissionTimeoutMs: number;
}

export interface PromptOptions {
  /** Called for each update, in order, one at a time; errors are logged, never fail the turn. */
  onUpdate?: (update: acp.SessionUpdate) => void | Promise<void>;
  /** For `permissions: ask-owner`: posts the question and waits for the owner's reaction. */
  askOwner?: AskOwner;
  /** The agent's form elicitation (a question back to people): posted in the thread, answered from there. */
  askQuestion?: (request: acp.CreateElicitationRequest, signal: AbortSignal) => Promise<acp.CreateElicitationResponse>;
  /**
   * The session's `_PreToolUse` gates, asked before `permissions` applies (docs/agents.md):
   * `block` → the request is rejected, whatever `agent.permissions` says.
   */
  preTool?: (request: acp.RequestPermissionRequest, signal: AbortSignal) => Promise<{ block: boolean; text: string }>;
}

/** Why a turn was stopped; `steer`: the bridge cancels it to prompt again with new messages merged in. */
export type Interrupt = "idle" | "max_turn" | "owner" | "shutdown" | "steer";

export interface TurnResult {
  stopReason: acp.StopReason;
  /** Concatenated `agent_message_chunk` text of the agent's last message, trimmed. */
  finalText: string;
  /** A compaction completed during the turn (a `_PostCompact` gate may want to run). */
  compacted: boolean;
  toolCalls: number;
  /** Set when a timeout cancelled the turn. */
  timedOut?: "idle" | "max_turn";
  /** Set when `cancel()` (owner's `!cancel`) stopped the turn. */
  cancelledBy?: "owner";
  /** The agent ignored session/cancel and its process was killed; the session is gone. */
  killed: boolean;
  /** Updates the agent sent during the turn (a steer that none followed was likely not read). */
  updates: number;
  usage?: acp.Usage | null;
  /** The turn's last `usage_update` (context tokens, the session's cumulative cost). */
  contextUsage?: acp.UsageUpdate;
}

export class TurnControl {
  readonly state = new TurnState();
  private chain: Promise<void> = Promise.resolve();
  private idleTimer: NodeJS.Timeout | undefined;
  private maxTimer: NodeJS.Timeout | undefined;
  private graceTimer: NodeJS.Timeout | undefined;
  private readonly cancelCtl = new AbortController();
  private waitingOnOwner = 0;
  interrupt: Interrupt | undefined;
  killed = false;
  private finished = false;

  constructor(
    private readonly proc: AgentProcess,
    private readonly sessionId: string,
    private readonly limits: TurnLimits,
    private readonly opts: PromptOptions,
    private readonly log: Logger,
  ) {}

  onUpdate(n: acp.SessionNotification): void {
    if (this.finished) return;
    this.state.apply(n.update);
    this.armIdle();
    const cb = this.opts.onUpdate;
    if (!cb) return;
    this.chain = this.chain
      .then(() => cb(n.update))
      .catch((err: unknown) => {
        this.log.warn({ evt: "agent.on_update_failed", sessionId: this.sessionId, err: String(err) }, "update handler failed");
      });
  }

  async onPermission(request: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse> {
    const both = AbortSignal.any([signal, this.cancelCtl.signal]);
    if (this.opts.preTool) {
      const gate = await this.opts.preTool(request, both);
      if (gate.block) {
        this.log.info(
          {
            evt: "agent.permission",
            sessionId: this.sessionId,
            tool: request.toolCall.title ?? request.toolCall.toolCallId,
            verdict: "denied",
            by: "pre_tool",
          },
          "permission answered",
        );
        // ACP has no field for a rejection's reason; `_meta` carries it for an agent that reads it.
        return { ...answer(request.options, false), _meta: { "buzz-bridge/pre_tool": gate.text } };
      }
    }
    const owner = this.limits.permissions === "ask-owner";
    if (owner) this.pauseIdle();
    try {
      const decision = await decidePermission(request, {
        policy: this.limits.permissions,
        askOwner: this.opts.askOwner,
        timeoutMs: this.limits.permissionTimeoutMs,
        signal: both,
      });
      this.log.info(
        {
          evt: "agent.permission",
          sessionId: this.sessionId,
          tool: request.toolCall.title ?? request.toolCall.toolCallId,
          verdict: decision.verdict,
          by: decision.by,
        },
        "permission answered",
      );
      return decision.response;
    } finally {
      if (owner) this.resumeIdle();
    }
  }

  /**
   * The agent asks people a question: the turn waits for them, so the idle clock stops
   * (`questions.timeout` bounds the wait instead). URL mode is not offered; an agent that
   * asks that way, or a bridge with nobody to ask, is answered `cancel`.
   */
  async onElicitation(request: acp.CreateElicitationRequest, signal: AbortSignal): Promise<acp.CreateElicitationResponse> {
    const ask = this.opts.askQuestion;
    if (!ask || request.mode !== "form" || this.interrupt) return { action: "cancel" };
    this.pauseIdle();
    try {
      return await ask(request, AbortSignal.any([signal, this.cancelCtl.signal]));
    } catch (err) {
      this.log.warn({ evt: "agent.elicitation_failed", sessionId: this.sessionId, err: String(err) }, "could not ask the question");
      return { action: "cancel" };
    } finally {
      this.resumeIdle();
    }
  }

  /**
   * Holds the idle clock while the agent waits on the bridge itself (a buzz tool whose
   * publish rides out a reconnect): that silence is ours, not the agent's. max_turn still
   * bounds the turn. Returns the release (idempotent).
   */
  holdIdle(): () => void {
    this.pauseIdle();
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.resumeIdle();
    };
  }

  private pauseIdle(): void {
    this.waitingOnOwner++;
    clearTimeout(this.idleTimer);
  }

  private resumeIdle(): void {
    this.waitingOnOwner--;
    this.armIdle();
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    if (this.finished || this.interrupt || this.waitingOnOwner > 0) return;
    this.idleTimer = setTimeout(() => this.stop("idle"), this.limits.idleTimeoutMs);
  }

  /** session/cancel now; the process is killed if the turn has not ended after the grace. */
  stop(why: Interrupt): void {
    if (this.finished || this.interrupt) return;
    this.interrupt = why;
    clearTimeout(this.idleTimer);
    clearTimeout(this.maxTimer);
    this.log.warn({ evt: "agent.turn_cancel", sessionId: this.sessionId, reason: why, agent_pid: this.proc.pid }, "cancelling turn");
    // session/cancel first, then the answers to open permission and question requests: the
    // agent learns the turn is over before it reads "cancelled" as an answer to act on.
    this.proc.agent.notify(acpSdk().methods.agent.session.cancel, { sessionId: this.sessionId }).catch(() => {});
    this.cancelCtl.abort();
    this.graceTimer = setTimeout(() => {
      if (this.finished) return;
      this.killed = true;
      this.log.warn(
        { evt: "agent.kill_after_grace", sessionId: this.sessionId, agent_pid: this.proc.pid, grace_ms: this.limits.cancelGraceMs },
        "agent ignored session/cancel; killing it",
      );
      this.proc.kill();
    }, this.limits.cancelGraceMs);
  }

  async run(prompt: acp.ContentBlock[]): Promise<TurnResult> {
    this.armIdle();
    const stderrMark = this.proc.stderrMark();
    this.maxTimer = setTimeout(() => this.stop("max_turn"), this.limits.maxTurnMs);
    const request = this.proc.agent.request(acpSdk().methods.agent.session.prompt, { sessionId: this.sessionId, prompt });
    request.catch(() => {}); // settled below; avoid an unhandled rejection when the exit wins
    type Outcome = { kind: "response"; res: acp.PromptResponse } | { kind: "error"; err: unknown } | { kind: "exit" };
    try {
      const outcome: Outcome = await Promise.race([
        request.then(
          (res): Outcome => ({ kind: "response", res }),
          (err: unknown): Outcome => ({ kind: "error", err }),
        ),
        this.proc.exited.then((): Outcome => ({ kind: "exit" })),
      ]);
      if (outcome.kind === "response") {
        await this.chain;
        return this.result(outcome.res.stopReason, outcome.res.usage);
      }
      // A rejected prompt right before the exit is the exit's doing: wait briefly to tell which.
      if (outcome.kind === "error" && !(await this.proc.lost())) {
        const e = new AgentProtocolError(this.proc.displayCommand, "session/prompt", outcome.err);
        e.provider = classifyProviderError(outcome.err, this.proc.stderrSince(stderrMark));
        throw e;
      }
      await this.proc.exited;
      await this.chain;
      // Killed after the grace, or stopped by the bridge (rotate, shutdown): not a crash.
      if (this.killed || this.proc.exitInfo?.expected) return this.result("cancelled");
      const exit = this.proc.exitInfo!;
      throw new AgentCrashedError(this.proc.displayCommand, exit.code, exit.signal, this.proc.stderrTail());
    } finally {
      this.finished = true;
      clearTimeout(this.idleTimer);
      clearTimeout(this.maxTimer);
      clearTimeout(this.graceTimer);
      this.cancelCtl.abort();
    }
  }

  private result(stopReason: acp.StopReason, usage?: acp.Usage | null): TurnResult {
    const r: TurnResult = {
      stopReason,
      finalText: this.state.finalText,
      compacted: this.state.compacted,
      toolCalls: this.state.toolCalls,
      killed: this.killed,
      updates: this.state.updates,
    };
    if (this.interrupt === "idle" || this.interrupt === "max_turn") r.timedOut = this.interrupt;
    if (this.interrupt === "owner") r.cancelledBy = "owner";
    if (usage) r.usage = usage;
    if (this.state.lastUsage) r.contextUsage = this.state.lastUsage;
    return r;
  }
}
