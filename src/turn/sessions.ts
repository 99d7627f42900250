/**
 * Which agent session serves which scope. A scope's session lives across turns (the agent
 * keeps its conversation); its link registration lives exactly as long as the session,
 * because the proxy was started with that registration's token. What the agent publishes
 * through the link counts toward the turn bound to the session at that moment.
 *
 * A session ends (rotates) on `!rotate`, when it failed or crashed, after
 * `agent.max_turns_per_session` turns, or when a prompt stopped for a spent context or
 * request budget; the scope's next turn opens a fresh one (docs/architecture.md §3).
 */
import type * as acp from "@agentclientprotocol/sdk/unstable";
import type { Event } from "nostr-tools";
import type { AgentPool, AgentSession, McpSlot } from "../agent/index.js";
import type { Logger } from "../base/log.js";
import type { Config } from "../config/schema.js";
import { isolationFor, policyFor } from "../config/schema.js";
import { manifestFromConfig, type LinkServer } from "../link/index.js";
import { createBuzzTools } from "./buzz-tool-handlers.js";
import type { RelayPort } from "../relay/port.js";
import { buildStanding, PromptSession, type StandingInput } from "../prompt/index.js";
import type { ChannelInfo } from "../buzz/directory.js";
import { KIND } from "../nostr/kinds.js";
import { isProgressNote } from "../nostr/events.js";
import type { InflightPublishes } from "./inflight.js";
import type { MidTurnSession } from "./mid-turn.js";
import type { TurnHooks } from "./ports.js";
import { openSlot, type SlotSession } from "./mcp-slot.js";
import type { HeldPosts } from "./held-posts.js";

/** How long a turn's end waits for a lazily started proxy before gates are skipped. */
const PROXY_CONNECT_WAIT_MS = 3000;

/** Stop reasons after which a session is not reused: its context or request budget is spent. */
const ROTATE_STOP_REASONS = new Set(["max_tokens", "max_turn_requests"]);

/** The stop reason, when it spent the session's budget (the session must rotate). */
export function spentBudget(stopReason: string): string | undefined {
  return ROTATE_STOP_REASONS.has(stopReason) ? stopReason : undefined;
}

/** The session's title: `#channel`, plus the thread for a thread scope; at most 80 characters, printable. */
export function sessionTitle(channelName: string, root?: string): string {
  const clean = channelName.replace(/[\p{Cc}\p{Cf}]/gu, "").trim() || "channel";
  const title = root ? `#${clean} · thread ${root.slice(0, 8)}` : `#${clean}`;
  return title.length > 80 ? `${title.slice(0, 79)}…` : title;
}

/** The turn a session is running: what the link's publishes count toward. */
interface TurnBinding {
  turnId: number;
  published: Set<string>;
  /** What a send_message without reply_to answers. */
  anchor: string;
  inflight: InflightPublishes;
  /** send_message calls the turn made, and how many it may make (`replies.max_per_turn`). */
  messages: { sent: number; max: number };
  /** Aborted once the turn is over (ended, cancelled, past max_turn): the link's tools stop waiting for the relay. */
  over?: AbortSignal;
  /** The turn's own signal: aborted when it is stopped (`owner`: a `!cancel` or a deletion; `shutdown`). */
  stopped: AbortSignal;
  /** The turn's send_message posts wait here for a `hold_replies` gate's approval; absent: posted at once. */
  held?: HeldPosts;
}

/** What a tool call of a stopped turn is told. */
function stopReason(reason: unknown): string {
  return reason === "shutdown" ? "the daemon is stopping" : "cancelled";
}

export interface ScopeSession {
  session: AgentSession;
  /** The session's MCP slot: its stdio proxy's link registration, or its HTTP endpoint binding. */
  slot: SlotSession;
  /** Servers behind the session's proxy; with none there is nothing to gate. */
  hookServers: number;
  /** The session's servers with `pre_tool`, and whether any of them blocks (docs/agents.md). */
  preTool: { any: boolean; block: boolean };
  /** The session's `hold_replies` servers: its turns' posts wait for their approval. */
  holdGates: string[];
  /** Turns (mentions' batches) this session has run, for agent.max_turns_per_session. */
  turns: number;
  prompt: PromptSession;
  current?: TurnBinding;
  /** A `_PostCompact` answer, put at the start of the session's next prompt. */
  injection?: string;
}

/** Where a scope's agent session id is kept across restarts (the queue's store). */
export interface SessionIdStore {
  get(scope: string): string | undefined;
  save(scope: string, sessionId: string): void;
  forget(scope: string): void;
}

export interface ScopeSessionsDeps {
  /** The agent's own pubkey (hex): its answers never mention itself. */
  self?: string;
  config: () => Config;
  pool: Pick<AgentPool, "acquire" | "session" | "rotate">;
  link: Pick<LinkServer, "register" | "hookRan">;
  relay: RelayPort;
  ids?: SessionIdStore;
  /** Called with each tool reply's id after signing and before publishing (fleet mode). */
  recordBeforePublish?(turnId: number, eventId: string): Promise<void>;
  logger?: Logger;
}

export class ScopeSessions {
  private readonly scopes = new Map<string, ScopeSession>();

  constructor(private readonly d: ScopeSessionsDeps) {}

  get(key: string): ScopeSession | undefined {
    return this.scopes.get(key);
  }

  /**
   * The scope's session, reused while its agent lives, else opened (resumed when the agent
   * can). It comes back held for the caller's turn: the caller calls `session.unhold()` when
   * the turn is over, so the pool never closes it to make room while the turn still needs it.
   */
  async open(scope: { key: string; root?: string }, channel: ChannelInfo, standing: StandingInput, log: Logger): Promise<ScopeSession> {
    const key = scope.key;
    const existing = this.scopes.get(key);
    if (existing?.session.alive && this.d.pool.session(key) === existing.session) {
      existing.session.hold();
      return existing;
    }
    if (existing) {
      existing.slot.unregister();
      this.scopes.delete(key);
    }
    const cfg = this.d.config();
    const policy = policyFor(cfg, channel.id);
    let ss: ScopeSession | undefined;
    const tools = createBuzzTools({
      channel: channel.id,
      relay: this.d.relay,
      defaultReplyTo: () => ss?.current?.anchor,
      self: this.d.self,
      placement: () => policyFor(this.d.config(), channel.id).reply_placement,
      forum: () => channel.type === "forum",
      maxAttachmentBytes: () => this.d.config().attachments.max_bytes,
      maxBytes: cfg.replies.max_bytes,
      maxUnbound: cfg.replies.max_per_turn,
      turnOver: () => ss?.current?.over,
      logger: this.d.logger?.child({ scope: key }),
      bindTurn: () => {
        const cur = ss?.current;
        if (!ss || !cur) return undefined;
        const done = cur.inflight.begin();
        const resumeIdle = ss.session.holdIdle();
        let released = false;
        const record = this.d.recordBeforePublish;
        // Only answers count as the turn's replies: reactions and progress notes do not.
        const answer = (ev: Event) => ev.kind !== KIND.reaction && !isProgressNote(ev);
        return {
          publishing: record && ((ev) => (answer(ev) ? record(cur.turnId, ev.id) : Promise.resolve())),
          published: (ev) => {
            if (answer(ev)) cur.published.add(ev.id);
          },
          admitMessage: () => {
            if (cur.messages.sent >= cur.messages.max) return { ok: false, max: cur.messages.max };
            cur.messages.sent++;
            return { ok: true };
          },
          stopped: () => (cur.stopped.aborted ? stopReason(cur.stopped.reason) : undefined),
          hold: cur.held && ((post) => cur.held!.add(post)),
          release: () => {
            if (released) return;
            released = true;
            resumeIdle();
            done();
          },
        };
      },
    });
    const manifest = {
      ...manifestFromConfig(cfg.mcp, policy.mcp),
      attachment_max_bytes: cfg.attachments.max_bytes,
      message_max_bytes: cfg.replies.max_bytes,
    };
    let slot: SlotSession | undefined;
    let transport: McpSlot["transport"] = "stdio";
    let held: AgentSession | undefined;
    try {
      const previousSessionId = this.d.ids?.get(key);
      const session = await this.d.pool.acquire(key, {
        channel: { id: channel.id, name: channel.name },
        mcpEnv: async (ctx) => {
          slot?.unregister();
          const opened = await openSlot({ transport: cfg.mcp.transport, key, manifest, tools, link: this.d.link, logger: log }, ctx);
          slot = opened.session;
          transport = opened.slot.transport;
          return opened.slot;
        },
        isolation: isolationFor(cfg, channel.id),
        standingContext: buildStanding(standing).text,
        previousSessionId,
        title: sessionTitle(channel.name, scope.root),
        hold: true,
      });
      held = session;
      this.d.ids?.save(key, session.sessionId);
      // A resumed session already holds the standing context from its first prompt.
      const standingDelivered = session.standingContextVia === "system_prompt" || session.resumed;
      if (!slot) throw new Error(`session ${key}: the agent pool opened it without asking for its MCP slot`);
      ss = {
        session,
        slot,
        hookServers: manifest.servers.length,
        holdGates: manifest.servers.filter((s) => cfg.mcp.servers[s.name]?.hold_replies).map((s) => s.name),
        preTool: { any: manifest.servers.some((s) => s.pre_tool), block: manifest.servers.some((s) => s.pre_tool === "block") },
        turns: 0,
        prompt: new PromptSession(standing, standingDelivered),
      };
      this.scopes.set(key, ss);
      log.info(
        {
          evt: "turn.session",
          agent_pid: session.proc.pid,
          session: session.sessionId,
          resumed: session.resumed,
          mcp: transport,
          standing_context: session.standingContextVia,
        },
        "agent session ready",
      );
      return ss;
    } catch (err) {
      held?.unhold();
      slot?.unregister();
      throw err;
    }
  }

  /**
   * Counts the turn the session just ran; says why the session must end now, if it must:
   * a stop reason that spent its budget (`spent`, any prompt of the turn), else `maxTurns`.
   */
  turnDone(ss: ScopeSession, spent: string | undefined, maxTurns: number): string | undefined {
    ss.turns++;
    if (spent) return spent;
    return maxTurns > 0 && ss.turns >= maxTurns ? "max_turns" : undefined;
  }

  /** Ends the scope's session for `reason` (from turnDone), unless it has ended already. */
  async rotateIfDue(key: string, reason: string | undefined): Promise<void> {
    if (reason && this.scopes.has(key)) await this.rotate((k) => k === key, reason);
  }

  /** The matching scopes' sessions end; the next turn opens a fresh one. Returns how many. */
  async rotate(match: (scopeKey: string) => boolean, reason = "owner"): Promise<number> {
    let n = 0;
    for (const [key, s] of [...this.scopes]) {
      if (!match(key)) continue;
      this.scopes.delete(key);
      s.slot.unregister();
      this.d.ids?.forget(key);
      await this.d.pool.rotate(key, reason);
      n++;
    }
    return n;
  }

  /** The scope's session as a running turn steers into it: whichever is live when asked (none: refused). */
  steeringPort(key: string): MidTurnSession {
    const live = () => this.scopes.get(key)?.session;
    return {
      get steerable() {
        return live()?.steerable ?? false;
      },
      get updatesSoFar() {
        return live()?.updatesSoFar ?? 0;
      },
      steer: (blocks) => live()?.steer(blocks) ?? Promise.resolve({ kind: "refused", reason: "no session" }),
      interruptForSteer: () => live()?.interruptForSteer() ?? false,
      cancelStray: () => live()?.cancelStray(),
    };
  }

  /** Shutdown: every link registration ends (the pool closes the agents). */
  closeAll(): void {
    for (const s of this.scopes.values()) s.slot.unregister();
    this.scopes.clear();
  }
}

/**
 * `_PreToolUse` for the agent's own tools (ACP `session/request_permission`), through the
 * session's slot. Fail closed like the gates themselves: when a `block` gate exists and the
 * slot cannot be asked (the proxy is not connected, the link broke), the tool is blocked.
 */
export function slotPreTool(
  slot: SlotSession,
  hasBlockGate: boolean,
  log: Logger,
  connectWaitMs = PROXY_CONNECT_WAIT_MS,
): (request: acp.RequestPermissionRequest) => Promise<{ block: boolean; text: string }> {
  const unreachable = (why: string) => {
    log.warn({ evt: "gate.unavailable", hook: "_PreToolUse", err: why }, "pre-tool gates could not be asked");
    return hasBlockGate
      ? { block: true, text: `the pre-tool gates could not be asked (${why}); a block gate fails closed` }
      : { block: false, text: "" };
  };
  return async (request) => {
    if (!(await slot.whenConnected(connectWaitMs))) return unreachable("the session's MCP proxy is not connected");
    const call = request.toolCall;
    try {
      const fan = await slot.runHook("_PreToolUse", {
        args: {
          tool: call.title ?? call.toolCallId,
          title: call.title ?? undefined,
          kind: call.kind ?? "other",
          arguments: call.rawInput ?? {},
        },
      });
      return { block: fan.verdict === "object", text: fan.text };
    } catch (err) {
      return unreachable(String(err));
    }
  };
}

/**
 * The session's hooks, through its slot. An agent may start its stdio proxy lazily (or not
 * at all for a turn without tools), so the proxy gets a moment to connect; a proxy that
 * never connects, or a link that breaks, cannot hold a turn hostage: logged, no objection.
 * Over HTTP the daemon holds the servers itself, so they are reachable at once.
 */
export function slotHooks(slot: SlotSession, log: Logger, connectWaitMs = PROXY_CONNECT_WAIT_MS): TurnHooks {
  return {
    runHook: async (name, opts) => {
      if (!(await slot.whenConnected(connectWaitMs))) {
        log.warn({ evt: "gate.unavailable", hook: name }, "the session's MCP proxy is not connected; stop gates could not run");
        return { text: "", verdict: "allow", ms: 0, servers: [] };
      }
      try {
        return await slot.runHook(name, opts);
      } catch (err) {
        log.warn({ evt: "gate.unavailable", hook: name, err: String(err) }, "stop gates could not run");
        return { text: "", verdict: "allow", ms: 0, servers: [] };
      }
    },
  };
}
