/**
 * Turns a queued batch into a turn: finds (or opens) the scope's agent session with its
 * proxy link, builds the prompt, runs the turn and reports the outcome to the queue.
 *
 * A scope's session lives across turns (the agent keeps its conversation); its link
 * registration lives exactly as long as the session, because the proxy was started with
 * that registration's token. What the agent publishes through the link is recorded on
 * the turn running at that moment, durably (the queue's reply ids), so a retry after a
 * crash never posts the same answer twice.
 */
import type { Event, EventTemplate } from "nostr-tools";
import type { AgentPool, AgentSession, TurnUsage } from "../agent/index.js";
import type { Config } from "../config/schema.js";
import { isolationFor, policyFor } from "../config/schema.js";
import { createBuzzTools, manifestFromConfig, type LinkServer, type LinkSession, type RelayPort } from "../link/index.js";
import type { Logger } from "../base/log.js";
import { buildStanding, PromptSession, TurnPromptBuilder, type StandingInput } from "../prompt/index.js";
import { heartbeatBlocks } from "../prompt/heartbeat.js";
import type { Batch, Scheduler } from "../queue/index.js";
import type { ChannelInfo } from "../relay/directory.js";
import { reaction, replyRefFor, threadRootOf } from "../relay/events.js";
import { KIND } from "../relay/kinds.js";
import { addUsage } from "../agent/usage.js";
import { failureNotice, runTurn, type Enforce, type TurnOutcome } from "./run.js";
import type { TextBlock, TurnHooks, TurnPublisher } from "./ports.js";

/** How long a turn's end waits for a lazily started proxy before gates are skipped. */
const PROXY_CONNECT_WAIT_MS = 3000;
/** Failure notices per failed batch, one per thread, before they are merged into one. */
const MAX_NOTICE_THREADS = 10;
import { askOwnerByReaction } from "./ask-owner.js";
import { MidTurnInbox, type MidTurnHow, type SteerMethod } from "./mid-turn.js";
import { EMOJI } from "./signals.js";

export interface DispatcherDeps {
  config: () => Config;
  self: string;
  owner: string | undefined;
  pool: AgentPool;
  link: LinkServer;
  /** The queue's side of a turn's end (the single-daemon Scheduler, or a fleet's). */
  scheduler: Pick<Scheduler, "complete" | "fail" | "recordReply" | "leaveRunning" | "storedEvent">;
  relay: RelayPort;
  out: TurnPublisher;
  /** The channel as the turn should see it (name, description, type); may re-read metadata. */
  channel(id: string): ChannelInfo | undefined | Promise<ChannelInfo | undefined>;
  displayName(pubkey: string): Promise<string | undefined>;
  enforce: Enforce;
  /** Where a scope's agent session id is kept across restarts (the queue's store). */
  sessions?: { get(scope: string): string | undefined; save(scope: string, sessionId: string): void; forget(scope: string): void };
  logger: Logger;
  /**
   * Called with each reply's id after signing and before publishing (fleet mode): a daemon
   * that takes the turn over after a crash then knows to ask the relay about it.
   */
  recordBeforePublish?(turnId: number, eventId: string): Promise<void>;
  /** Turn outcome hook for metrics. */
  onTurnEnd?(outcome: TurnOutcome["status"], seconds: number): void;
  /** A mid-turn message reached the agent, `seconds` after it was accepted. */
  onMidTurnDelivered?(method: SteerMethod, seconds: number): void;
  /** The turn's usage as the agent reported it (none reported: not called), for metrics. */
  onUsage?(channel: string, model: string | undefined, usage: TurnUsage): void;
}

/** Stop reasons after which a session is not reused: its context or request budget is spent. */
const ROTATE_STOP_REASONS = new Set(["max_tokens", "max_turn_requests"]);

/**
 * Why a session must end after the turn it just ran, if it must: a stop reason that spent
 * its budget (`stopReason`, any prompt of the turn), else `agent.max_turns_per_session`.
 */
function rotationDue(stopReason: string | undefined, turns: number, maxTurns: number): string | undefined {
  if (stopReason) return stopReason;
  return maxTurns > 0 && turns >= maxTurns ? "max_turns" : undefined;
}

/** A running turn as the status page shows it. */
export interface RunningTurn {
  turnId: number;
  scope: string;
  channel: string;
  startedAt: number;
  /** When the agent last sent an update, and what it was. */
  lastActivityAt?: number;
  lastActivity?: string;
  /** `stop: wait` gates the turn waits on (⏳), and since when. */
  gateWait?: { gates: string[]; since: number };
}

/** The session's title: `#channel`, plus the thread for a thread scope; at most 80 characters, printable. */
export function sessionTitle(channelName: string, root?: string): string {
  const clean = channelName.replace(/[\p{Cc}\p{Cf}]/gu, "").trim() || "channel";
  const title = root ? `#${clean} · thread ${root.slice(0, 8)}` : `#${clean}`;
  return title.length > 80 ? `${title.slice(0, 79)}…` : title;
}

/** A set that reports each new member once (to the durable store). */
class RecordedSet extends Set<string> {
  constructor(private readonly record: (id: string) => void) {
    super();
  }

  override add(id: string): this {
    if (!this.has(id)) this.record(id);
    return super.add(id);
  }
}

/** Tool publishes still on their way (a reconnect can hold one for a while). */
interface Inflight {
  count: number;
  waiters: Array<() => void>;
}

interface ScopeSession {
  session: AgentSession;
  link: LinkSession;
  /** Servers behind the session's proxy; with none there is nothing to gate. */
  hookServers: number;
  /** Turns (mentions' batches) this session has run, for agent.max_turns_per_session. */
  turns: number;
  prompt: PromptSession;
  /** The turn whose replies the link's publishes count toward. */
  current?: { turnId: number; published: Set<string>; anchor: string; inflight: Inflight };
  injection?: string;
}

export class TurnDispatcher {
  private readonly scopes = new Map<string, ScopeSession>();
  /** Turns in flight; a heartbeat's has no mid-turn inbox (nothing is steered into it). */
  private readonly running = new Map<number, { scope: string; abort: AbortController; done: Promise<void>; info: RunningTurn; session?: AgentSession; mid?: MidTurnInbox; threads?: Set<string> }>();
  private readonly builder: TurnPromptBuilder;
  /** Heartbeat turns take negative ids in `running`, apart from the queue's turn ids. */
  private heartbeatSeq = 0;

  constructor(private readonly d: DispatcherDeps) {
    this.builder = new TurnPromptBuilder({ self: d.self, query: (f) => d.relay.query(f), displayName: (pk) => d.displayName(pk), logger: d.logger });
  }

  get inFlight(): number {
    return this.running.size;
  }

  /** Starts the batch's turn; resolves when it has ended and the queue knows the outcome. */
  start(batch: Batch): Promise<void> {
    const abort = new AbortController();
    const info: RunningTurn = { turnId: batch.turnId, scope: batch.scope.key, channel: batch.scope.channel, startedAt: Date.now() };
    const mid = this.inbox(batch);
    const threads = new Set(batch.events.map((e) => this.threadOf(e)));
    const entry: { scope: string; abort: AbortController; done: Promise<void>; info: RunningTurn; session?: AgentSession; mid?: MidTurnInbox; threads?: Set<string> } = { scope: batch.scope.key, abort, done: Promise.resolve(), info, mid, threads };
    this.running.set(batch.turnId, entry);
    entry.done = this.run(batch, abort.signal, entry, mid).finally(() => this.running.delete(batch.turnId));
    return entry.done;
  }

  /** The turns running now, with the agent's last activity and any gate wait. */
  runningTurns(): RunningTurn[] {
    return [...this.running.values()].map((r) => {
      const state = r.session?.current?.state;
      return { ...r.info, lastActivityAt: state?.lastActivityAt, lastActivity: state?.lastActivity };
    });
  }

  /** Whether the running turn can take a mid-turn message now (else it queues for the next turn). */
  canTake(turnId: number, ev?: Event): boolean {
    const r = this.running.get(turnId);
    // Steering is for the conversation the turn is in. A mention that starts or continues
    // another thread (channel scope) is a request of its own: it waits for the next turn,
    // whose answer goes into its own thread, instead of moving this turn's answer away
    // from the thread that asked first.
    if (ev && r?.threads && !r.threads.has(this.threadOf(ev))) return false;
    return !!r?.mid && !r.abort.signal.aborted && r.mid.canTake();
  }

  /** The thread an event belongs to (an edit: the thread of the message it edits). */
  private threadOf(ev: Event): string {
    return threadRootOf(this.anchorOf([ev]));
  }

  /** A message that already joined the turn in the queue (Scheduler.joinRunning) goes to the agent. */
  take(turnId: number, ev: Event, how: MidTurnHow, acceptedAt: number): void {
    this.running.get(turnId)?.mid?.take(ev, how, acceptedAt);
  }

  /** A message the session saw was deleted by its author: told to the agent in its next prompt. */
  retract(scopeKey: string, eventId: string, author: string): void {
    const ss = this.scopes.get(scopeKey);
    if (ss?.prompt.wasDelivered(eventId)) ss.prompt.retract(eventId, author);
  }

  /** The mid-turn inbox of a batch's turn; its session is the scope's, once the turn has opened it. */
  private inbox(batch: Batch): MidTurnInbox {
    const key = batch.scope.key;
    const live = () => this.scopes.get(key);
    const reacted = new Set<string>();
    const log = this.d.logger.child({ turn: batch.turnId, scope: key });
    return new MidTurnInbox({
      session: {
        get steerable() {
          return live()?.session.steerable ?? false;
        },
        get updatesSoFar() {
          return live()?.session.updatesSoFar ?? 0;
        },
        steer: (blocks) => live()?.session.steer(blocks) ?? Promise.resolve({ kind: "refused", reason: "no session" }),
        interruptForSteer: () => live()?.session.interruptForSteer() ?? false,
        cancelStray: () => live()?.session.cancelStray(),
      },
      blocks: async (events, framing) => {
        const ss = live();
        if (!ss) throw new Error("the scope's session is gone");
        return (await this.builder.midTurn(ss.prompt, events, framing, this.anchorOf(events))) as TextBlock[];
      },
      leave: (ids) => this.d.scheduler.leaveRunning(batch.turnId, ids),
      delivered: (events, method, waited) => {
        const ss = live();
        if (ss?.current && events.length) ss.current.anchor = this.anchorOf(events).id;
        for (const ev of events) {
          if (reacted.has(ev.id)) continue;
          reacted.add(ev.id);
          this.d.out.signal(reaction(ev, EMOJI.seen, batch.scope.channel));
        }
        for (const ms of waited) this.d.onMidTurnDelivered?.(method, ms / 1000);
      },
      logger: log,
    });
  }

  /** `!cancel`, shutdown: ends these turns; the queue was told already by its own cancel. */
  cancelTurns(turnIds: number[]): number {
    let n = 0;
    for (const id of turnIds) {
      const r = this.running.get(id);
      if (r && !r.abort.signal.aborted) {
        r.abort.abort("owner");
        this.d.pool.cancel(r.scope);
        n++;
      }
    }
    return n;
  }

  /** `!rotate` (and rotation by turn count or stop reason): the scopes' sessions end; the next turn opens a fresh one. */
  async rotate(match: (scopeKey: string) => boolean, reason = "owner"): Promise<number> {
    let n = 0;
    for (const [key, s] of [...this.scopes]) {
      if (!match(key)) continue;
      this.scopes.delete(key);
      s.link.unregister();
      this.d.sessions?.forget(key);
      await this.d.pool.rotate(key, reason);
      n++;
    }
    return n;
  }

  /** Waits for running turns up to `graceMs`, then cancels the rest. Returns how many were cancelled. */
  async drain(graceMs: number): Promise<number> {
    const all = [...this.running.values()];
    const finished = Promise.all(all.map((r) => r.done.catch(() => undefined)));
    const timedOut = await Promise.race([finished.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (!timedOut) return 0;
    const left = [...this.running.values()];
    for (const r of left) {
      r.abort.abort("shutdown");
      this.d.pool.cancel(r.scope, "shutdown");
    }
    await Promise.race([Promise.all(left.map((r) => r.done.catch(() => undefined))), new Promise((r) => setTimeout(r, 5000).unref())]);
    return left.length;
  }

  closeSessions(): void {
    for (const s of this.scopes.values()) s.link.unregister();
    this.scopes.clear();
  }

  private async run(whole: Batch, signal: AbortSignal, running: { info: RunningTurn; session?: AgentSession }, mid: MidTurnInbox): Promise<void> {
    const started = Date.now();
    const log = this.d.logger.child({ turn: whole.turnId, scope: whole.scope.key });
    let resumed = whole;
    if (whole.publishedReplyIds.length > 0 && whole.unansweredJoins.length > 0) {
      // The turn had answered, then took mid-turn messages, and the process stopped before
      // it answered those: they run now, on their own; what was published stays.
      log.info({ evt: "turn.resumed", replies: whole.publishedReplyIds, events: whole.unansweredJoins.map((e) => e.id) }, "messages steered into the turn before the restart still need an answer");
      resumed = { ...whole, events: whole.unansweredJoins, publishedReplyIds: [] };
    }
    const cfg = this.d.config();
    const end = (outcome: TurnOutcome["status"]) => this.d.onTurnEnd?.(outcome, (Date.now() - started) / 1000);

    const batch = await this.unanswered(resumed, log);
    if (batch.events.length === 0) {
      // The agent answered before the process stopped; running it again would answer twice.
      log.info({ evt: "turn.already_answered", replies: batch.publishedReplyIds }, "turn had already replied before the restart; not re-run");
      await mid.close(true);
      this.d.scheduler.complete(batch.turnId);
      return end("answered");
    }
    const anchor = this.anchorOf(batch.events);
    const thread = replyRefFor(anchor);
    const channel = await this.d.channel(batch.scope.channel);
    if (!channel) {
      await mid.close(true);
      this.finish(batch, { status: "failed", reason: `the bridge is no longer a member of channel ${batch.scope.channel}`, published: [] }, log, false);
      return end("failed");
    }
    const policy = policyFor(cfg, channel.id);
    const standing = await this.standingFor(cfg, channel, policy.team_instructions);

    let outcome: TurnOutcome;
    let retry = true;
    // Everything this turn publishes (tool replies, fallback, notices) is recorded durably
    // at once: a retry after a crash must know the thread was already answered.
    const published = new RecordedSet((id) => this.d.scheduler.recordReply(batch.turnId, id));
    let usage: TurnUsage | undefined;
    let model: string | undefined;
    let rotateFor: string | undefined;
    try {
      const ss = await this.sessionFor(batch, channel, standing, log);
      running.session = ss.session;
      model = ss.session.model;
      const inflight: Inflight = { count: 0, waiters: [] };
      ss.current = { turnId: batch.turnId, published, anchor: anchor.id, inflight };
      const blocks = (await this.builder.build(ss.prompt, {
        scope: batch.scope,
        channelType: channel.type,
        events: batch.events,
        anchor,
        standing,
        history: policy.history,
      })) as TextBlock[];
      ss.prompt.markDelivered(batch.events.map((e) => e.id));
      outcome = await runTurn(
        {
          turnId: String(batch.turnId),
          channel: channel.id,
          thread,
          triggers: batch.events,
          blocks,
          replyFallback: policy.reply_fallback,
          typing: cfg.relay.typing,
          enforce: this.d.enforce,
          gates: {
            maxRejections: cfg.gates.max_rejections,
            waitPollMs: cfg.gates.wait_poll,
            waitMaxMs: cfg.gates.wait_max,
            stopModes: Object.fromEntries(Object.entries(cfg.mcp.servers).map(([n, s]) => [n, s.stop])),
          },
        },
        {
          agent: {
            prompt: (b, s) =>
              mid.prompt(
                b,
                async (blocks) => {
                  const r = await ss.session.prompt(blocks, {
                    askOwner: this.d.owner ? (req, sig) => askOwnerByReaction(req, { ...this.askDeps(channel.id, thread, s), timeoutMs: cfg.agent.permission_timeout }, sig) : undefined,
                  });
                  usage = addUsage(usage, r.turnUsage);
                  if (ROTATE_STOP_REASONS.has(r.stopReason)) rotateFor = r.stopReason;
                  return { stopReason: r.stopReason, finalText: r.finalText, compacted: r.compacted, timedOut: r.timedOut, updates: r.updates };
                },
                () => signal.aborted,
              ),
          },
          hooks: this.d.enforce === "bridge" && ss.hookServers > 0 ? this.hooksOf(ss, log) : undefined,
          out: this.outFor(batch.turnId),
          logger: log,
          published,
          settled: () => (inflight.count === 0 ? Promise.resolve() : new Promise<void>((r) => inflight.waiters.push(r))),
          signal,
          onGateWait: (gates) => (running.info.gateWait = gates ? { gates, since: Date.now() } : undefined),
          pendingInjection: {
            take: () => {
              const t = ss.injection;
              ss.injection = undefined;
              return t;
            },
            set: (t) => (ss.injection = t),
          },
        },
      );
      ss.current = undefined;
      for (const id of published) ss.prompt.markDelivered([id]);
      rotateFor = rotationDue(rotateFor, ++ss.turns, cfg.agent.max_turns_per_session);
    } catch (err) {
      // The breaker open (now, or by this very failure): a retry within its window cannot
      // succeed, so the thread hears at once what happened instead of after the retry wait.
      const circuit = this.d.pool.circuitError();
      const reason = circuit?.message ?? (err instanceof Error ? err.message : String(err));
      log.warn({ evt: "turn.start_failed", err: err instanceof Error ? err.message : String(err) }, "could not start the turn");
      outcome = { status: "failed", reason, published: [...published] };
      if (circuit) retry = false;
      // A session that failed to open or crashed is not reused.
      await this.rotate((k) => k === batch.scope.key);
    }
    // Mid-turn messages never given to the agent wait for the next turn; a cancelled turn
    // ended them (owner), a shutdown leaves them in the turn to run again after the restart.
    await mid.close(!signal.aborted);
    if (usage) this.d.onUsage?.(channel.id, model, usage);
    // The session ends after its turn budget, or when the agent ran out of context or
    // requests: the next mention in the scope starts a fresh session.
    if (rotateFor && this.scopes.has(batch.scope.key)) await this.rotate((k) => k === batch.scope.key, rotateFor);
    if (signal.aborted && signal.reason === "shutdown") {
      // Left running in the store: the next start re-queues it (its one retry), nothing is lost.
      log.info({ evt: "turn.interrupted", published: outcome.published.length }, "turn interrupted by shutdown; it runs again after restart");
      return;
    }
    this.finish(batch, outcome, log, retry, { model, usage });
    end(outcome.status);
  }

  /**
   * A turn that ran before (a restart, a retry) may have answered some of its mentions
   * already, and not all of that is in the store: the process can die between the relay's
   * OK for a reply and the write that records it. The relay is the record of what people
   * saw, so it is asked: a trigger with an agent message replying to it is answered (the
   * reply is recorded now), and only the rest run again. Without the relay's answer, the
   * store decides alone: anything recorded means the turn is answered.
   */
  private async unanswered(batch: Batch, log: Logger): Promise<Batch> {
    if (batch.attempt <= 1 && !batch.recovered && batch.publishedReplyIds.length === 0) return batch;
    const found = await this.answeredOnRelay(batch.events, log);
    if (!found) return batch.publishedReplyIds.length > 0 ? { ...batch, events: [] } : batch;
    for (const id of found.replies) this.d.scheduler.recordReply(batch.turnId, id);
    if (found.answered.size === 0) return batch.publishedReplyIds.length > 0 ? { ...batch, events: [] } : batch;
    const events = batch.events.filter((e) => !found.answered.has(e.id));
    const publishedReplyIds = [...new Set([...batch.publishedReplyIds, ...found.replies])];
    if (events.length > 0) log.info({ evt: "turn.already_answered", replies: publishedReplyIds, answered: found.answered.size, remaining: events.length }, "some of the turn's mentions were answered before; the rest run again");
    return { ...batch, events, publishedReplyIds };
  }

  /**
   * Which of `events` the agent has answered, as the relay shows it: a reply answers its
   * parent and, within that thread, every earlier event (an agent answers a thread once,
   * under its last message). Undefined when the relay cannot be asked.
   */
  private async answeredOnRelay(events: Event[], log: Logger): Promise<{ answered: Set<string>; replies: string[] } | undefined> {
    // An edit is answered under the message it edits (the reply anchor): a reply to that counts for it.
    const ids = events.map((e) => (e.kind === KIND.edit ? this.anchorOf([e]).id : e.id));
    let found: Event[];
    try {
      found = await this.d.relay.query([{ kinds: [KIND.message], authors: [this.d.self], "#e": [...new Set(ids)], limit: 1000 }]);
    } catch (err) {
      log.warn({ evt: "turn.replies_unknown", err: err instanceof Error ? err.message : String(err) }, "could not ask the relay which mentions were already answered");
      return undefined;
    }
    const answered = new Set<string>();
    const replies: string[] = [];
    for (const r of found) {
      if (r.pubkey !== this.d.self) continue;
      const parent = r.tags.find((t) => t[0] === "e" && t[3] === "reply")?.[1] ?? (threadRootOf(r) === r.id ? undefined : threadRootOf(r));
      const at = parent ? ids.lastIndexOf(parent) : -1;
      if (at < 0) continue;
      const thread = threadRootOf(this.anchorOf([events[at]!]));
      for (const e of events.slice(0, at + 1)) if (threadRootOf(this.anchorOf([e])) === thread) answered.add(e.id);
      replies.push(r.id);
    }
    return { answered, replies };
  }

  private finish(batch: Batch, outcome: TurnOutcome, log: Logger, retry: boolean, extra: { model?: string; usage?: TurnUsage } = {}): void {
    log.info({ evt: "turn.end", status: outcome.status, reason: outcome.status === "failed" ? outcome.reason : undefined, published: outcome.published.length, via: outcome.status === "answered" ? outcome.via : undefined, model: extra.model, usage: extra.usage }, "turn ended");
    if (outcome.status === "failed") {
      // A failed turn that already replied in its one thread is not retried: the reply is
      // the answer, marked ⚠️. A batch from several threads may have answered only some of
      // them: it is retried, and the retry runs only for the mentions still unanswered.
      const threads = new Set(batch.events.map((e) => threadRootOf(e))).size;
      if (outcome.published.length > 0 && threads === 1) {
        this.d.scheduler.complete(batch.turnId);
        this.markFailed(batch.events, batch.scope.channel);
      } else this.d.scheduler.fail(batch.turnId, outcome.reason, { retry }); // final → postFailure
    } else this.d.scheduler.complete(batch.turnId);
  }

  private async sessionFor(batch: { scope: { key: string; root?: string } }, channel: ChannelInfo, standing: StandingInput, log: Logger): Promise<ScopeSession> {
    const key = batch.scope.key;
    const existing = this.scopes.get(key);
    if (existing?.session.alive && this.d.pool.session(key) === existing.session) return existing;
    if (existing) {
      existing.link.unregister();
      this.scopes.delete(key);
    }
    const cfg = this.d.config();
    const policy = policyFor(cfg, channel.id);
    let ss: ScopeSession | undefined;
    const tools = createBuzzTools({
      channel: channel.id,
      relay: this.d.relay,
      defaultReplyTo: () => ss?.current?.anchor,
      bindTurn: () => {
        const cur = ss?.current;
        if (!cur) return undefined;
        cur.inflight.count++;
        const resumeIdle = ss!.session.holdIdle();
        let released = false;
        const record = this.d.recordBeforePublish;
        return {
          publishing: record && ((ev) => (ev.kind !== KIND.reaction ? record(cur.turnId, ev.id) : Promise.resolve())),
          published: (ev) => {
            if (ev.kind !== KIND.reaction) cur.published.add(ev.id);
          },
          release: () => {
            if (released) return;
            released = true;
            resumeIdle();
            if (--cur.inflight.count === 0) for (const wake of cur.inflight.waiters.splice(0)) wake();
          },
        };
      },
    });
    const manifest = manifestFromConfig(cfg.mcp, policy.mcp);
    const link = this.d.link.register({ sessionKey: key, manifest, tools });
    try {
      const previousSessionId = this.d.sessions?.get(key);
      const session = await this.d.pool.acquire(key, {
        channelName: channel.name,
        // The session's own socket, in its process's link directory (all a sandboxed agent sees of the state directory).
        mcpEnv: (dir) => (dir ? link.listen(dir) : link.env),
        isolation: isolationFor(cfg, channel.id),
        standingContext: buildStanding(standing).text,
        previousSessionId,
        title: sessionTitle(channel.name, batch.scope.root),
      });
      this.d.sessions?.save(key, session.sessionId);
      // A resumed session already holds the standing context from its first prompt.
      const standingDelivered = session.standingContextVia === "system_prompt" || session.resumed;
      ss = { session, link, hookServers: manifest.servers.length, turns: 0, prompt: new PromptSession(standing, standingDelivered) };
      this.scopes.set(key, ss);
      log.info({ evt: "turn.session", agent_pid: session.proc.pid, session: session.sessionId, resumed: session.resumed, standing_context: session.standingContextVia }, "agent session ready");
      return ss;
    } catch (err) {
      link.unregister();
      throw err;
    }
  }

  /**
   * The session's hooks over the link. An agent may start its MCP servers lazily (or not
   * at all for a turn without tools), so the proxy gets a moment to connect; a proxy that
   * never connects, or a link that breaks, cannot hold a turn hostage: logged, no objection.
   */
  private hooksOf(ss: ScopeSession, log: Logger): TurnHooks {
    return {
      runHook: async (name, opts) => {
        const deadline = Date.now() + PROXY_CONNECT_WAIT_MS;
        while (!ss.link.connected() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        if (!ss.link.connected()) {
          log.warn({ evt: "gate.unavailable", hook: name }, "the session's MCP proxy is not connected; stop gates could not run");
          return { text: "", verdict: "allow", ms: 0, servers: [] };
        }
        try {
          return await ss.link.runHook(name, opts);
        } catch (err) {
          log.warn({ evt: "gate.unavailable", hook: name, err: String(err) }, "stop gates could not run");
          return { text: "", verdict: "allow", ms: 0, servers: [] };
        }
      },
    };
  }

  /** The publisher as one turn uses it: its replies' ids are recorded before they are sent, when asked to. */
  private outFor(turnId: number): TurnPublisher {
    const record = this.d.recordBeforePublish;
    if (!record) return this.d.out;
    return {
      publish: (t, o) => this.d.out.publish(t, { ...o, beforePublish: (ev) => record(turnId, ev.id) }),
      signal: (t) => this.d.out.signal(t),
    };
  }

  private askDeps(channel: string, thread: { root: string; parent: string }, signal: AbortSignal | undefined) {
    return { channel, thread, owner: this.d.owner!, out: this.d.out, relay: this.d.relay, signal };
  }

  /** The standing context of a session in `channel` (a mention's turn or a heartbeat). */
  private async standingFor(cfg: Config, channel: ChannelInfo, teamInstructions: string): Promise<StandingInput> {
    return {
      channel: { id: channel.id, name: channel.name, about: channel.about },
      persona: cfg.agent.persona,
      teamInstructions,
      owner: this.d.owner ? { pubkey: this.d.owner, name: await this.d.displayName(this.d.owner) } : undefined,
    };
  }

  /** ⚠️ on the (last few) mentions of a turn that ended failed for good. */
  private markFailed(events: Event[], channel: string): void {
    for (const e of events.slice(-5)) this.d.out.signal(reaction(e, EMOJI.failed, channel));
  }

  /**
   * The notices (and ⚠️) posted when a turn fails for good (the queue's onFinalFailure): one
   * in each thread of the batch that has no answer yet, under its last message, naming its
   * askers. Mentions an earlier attempt answered get nothing more. A batch from more threads
   * than MAX_NOTICE_THREADS gets one notice under its last message naming everyone instead.
   */
  async postFailure(events: Event[], error: string, channel: string): Promise<void> {
    if (!events.length) return;
    this.markFailed(events, channel);
    const log = this.d.logger.child({ channel });
    const found = await this.answeredOnRelay(events, log);
    const open = found ? events.filter((e) => !found.answered.has(e.id)) : events;
    const threads = new Map<string, Event[]>();
    for (const e of open) threads.set(threadRootOf(e), [...(threads.get(threadRootOf(e)) ?? []), e]);
    const groups = threads.size > MAX_NOTICE_THREADS ? [open] : [...threads.values()];
    for (const group of groups) {
      if (!group.length) continue;
      const anchor = this.anchorOf(group);
      await this.d.out.publish(failureNotice(channel, { root: threadRootOf(anchor), parent: anchor.id }, group, error));
    }
  }

  /**
   * What the turn replies to: its newest message, or for an edit (which carries no thread
   * tags) the message it edits, so the answer lands in that message's thread.
   */
  private anchorOf(events: Event[]): Event {
    const last = events[events.length - 1]!;
    if (last.kind !== KIND.edit) return last;
    const target = last.tags.find((t) => t[0] === "e")?.[1];
    return (target && this.d.scheduler.storedEvent(target)) || last;
  }

  /**
   * A heartbeat turn: `text` prompted in the channel's heartbeat session (its own, apart
   * from every thread's). Nothing is queued or retried, there are no reactions or typing
   * (no mention to react to) and no fallback reply: a heartbeat with nothing to do stays
   * silent. What the agent posts lands top-level in the channel. It counts as a turn in
   * flight, so `!status` shows it and shutdown drains it like any other.
   */
  heartbeat(channelId: string, text: string): Promise<TurnOutcome["status"] | "no-channel"> {
    const id = --this.heartbeatSeq;
    const key = `heartbeat:${channelId}`;
    const abort = new AbortController();
    const entry: { scope: string; abort: AbortController; done: Promise<void>; info: RunningTurn; session?: AgentSession } = {
      scope: key, abort, done: Promise.resolve(), info: { turnId: id, scope: key, channel: channelId, startedAt: Date.now() },
    };
    this.running.set(id, entry);
    const done = this.runHeartbeat(id, key, channelId, text, abort.signal, entry).finally(() => this.running.delete(id));
    entry.done = done.then(() => undefined);
    return done;
  }

  private async runHeartbeat(id: number, key: string, channelId: string, text: string, signal: AbortSignal, running: { session?: AgentSession }): Promise<TurnOutcome["status"] | "no-channel"> {
    const started = Date.now();
    const log = this.d.logger.child({ scope: key, heartbeat: true });
    const channel = await this.d.channel(channelId);
    if (!channel) {
      log.warn({ evt: "turn.end", status: "failed", reason: `the bridge is not a member of heartbeat.channel ${channelId}` }, "heartbeat channel unknown");
      return "no-channel";
    }
    const cfg = this.d.config();
    const policy = policyFor(cfg, channel.id);
    const standing = await this.standingFor(cfg, channel, policy.team_instructions);
    const published = new Set<string>();
    let rotateFor: string | undefined;
    let status: TurnOutcome["status"];
    let reason: string | undefined;
    try {
      const ss = await this.sessionFor({ scope: { key } }, channel, standing, log);
      running.session = ss.session;
      const inflight: Inflight = { count: 0, waiters: [] };
      ss.current = { turnId: id, published, anchor: "", inflight };
      try {
        const r = await ss.session.prompt(heartbeatBlocks(ss.prompt, standing, text));
        if (r.turnUsage) this.d.onUsage?.(channel.id, ss.session.model, r.turnUsage);
        rotateFor = rotationDue(ROTATE_STOP_REASONS.has(r.stopReason) ? r.stopReason : undefined, ++ss.turns, cfg.agent.max_turns_per_session);
        if (inflight.count > 0) await new Promise<void>((res) => inflight.waiters.push(res));
        status = signal.aborted || r.stopReason === "cancelled" ? "cancelled" : r.timedOut ? "failed" : "answered";
        if (r.timedOut) reason = r.timedOut === "idle" ? "idle timeout" : "max_turn";
      } finally {
        ss.current = undefined;
      }
    } catch (err) {
      status = signal.aborted ? "cancelled" : "failed";
      reason = err instanceof Error ? err.message : String(err);
      await this.rotate((k) => k === key);
    }
    // The heartbeat session rotates by the same rules as a scope's.
    if (rotateFor && this.scopes.has(key)) await this.rotate((k) => k === key, rotateFor);
    // Not in turns_total: that counts mentions' turns; heartbeats have their own metric.
    log.info({ evt: "turn.end", status, reason, published: published.size, seconds: (Date.now() - started) / 1000 }, "heartbeat turn ended");
    return status;
  }

  /** For tests and `!status`. */
  publishTemplate(t: EventTemplate) {
    return this.d.out.publish(t);
  }
}
