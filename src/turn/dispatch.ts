/**
 * Turns a queued batch into a turn: finds (or opens) the scope's agent session with its
 * proxy link (`sessions.ts`), builds the prompt, runs the turn (`run.ts`) and reports the
 * outcome to the queue. A heartbeat turn (`heartbeat-turn.ts`) is started here too. The
 * turns in flight are kept in `running.ts`, what each has answered in `published-answers.ts`.
 */
import type { Event } from "nostr-tools";
import type { AgentPool, TurnUsage } from "../agent/index.js";
import { addUsage } from "../agent/usage.js";
import type { Logger } from "../base/log.js";
import type { Config } from "../config/schema.js";
import { policyFor, type Policy } from "../config/schema.js";
import type { LinkServer } from "../link/index.js";
import type { RelayPort } from "../relay/port.js";
import { TurnPromptBuilder, type StandingInput } from "../prompt/index.js";
import type { AttachmentResolver } from "../prompt/attachment-listing.js";
import type { Batch, Scheduler } from "../queue/index.js";
import type { ChannelInfo } from "../buzz/directory.js";
import { message, PROGRESS_TAG, reaction, replyRefFor, threadRootOf, type ThreadRef } from "../nostr/events.js";
import { holdNotice, providerStep } from "./provider-failure.js";
import { Answers, anchorOf } from "./published-answers.js";
import { turnAsking } from "./asking.js";
import { QuestionDesk } from "./questions.js";
import { ProgressNote } from "./progress.js";
import { heartbeatScope, runHeartbeat } from "./heartbeat-turn.js";
import { InflightPublishes } from "./inflight.js";
import { MidTurnInbox, type MidTurnHow, type SteerMethod } from "./mid-turn.js";
import type { PromptBlock, TurnPublisher } from "./ports.js";
import type { Enforce } from "../config/enforce.js";
import { requesters, runTurn, type TurnOutcome, type TurnSpec } from "./run.js";
import { RunningTurns, type RunningEntry, type RunningTurn } from "./running.js";
import { slotHooks, slotPreTool, ScopeSessions, spentBudget, type ScopeSession, type SessionIdStore } from "./sessions.js";
import { EMOJI } from "./signals.js";
import type { TurnStatus, WorkStatusBoard } from "./work-status.js";
import { waitGatesOf } from "./stop-gates.js";
import { HeldPosts } from "./held-posts.js";
import { manifestFromConfig } from "../contract/manifest.js";

/** Where a turn happens and who is in it, as the turn shows them to the agent. */
export interface TurnDirectory {
  /** The channel as the turn should see it (name, description, type); may re-read metadata. */
  channel(id: string): ChannelInfo | undefined | Promise<ChannelInfo | undefined>;
  displayName(pubkey: string): Promise<string | undefined>;
  /** Display names of several pubkeys in one look-up (a prompt's people). */
  displayNames(pubkeys: string[]): Promise<ReadonlyMap<string, string | undefined>>;
}

/** What a turn writes down durably (in the queue's store), so a restart or another daemon of the fleet knows it. */
export interface TurnLedger {
  /**
   * Called with each reply's id after signing and before publishing: whoever runs the turn
   * again after a crash (this daemon restarted, or another of the fleet) then knows to ask
   * the relay about it. Fails when this daemon no longer holds the scope: not published.
   */
  recordBeforePublish?(turnId: number, eventId: string): Promise<void>;
  /** Of these mentions, those never given 👀 before, claimed now (durably, by the queue): 👀 once per mention. */
  claimSeen?(eventIds: string[]): Promise<string[]>;
}

/** What turns report, for metrics and the status page; each optional. */
export interface TurnReports {
  /** A turn's outcome, for metrics and the status page's recent turns. */
  turnEnded?(outcome: TurnOutcome["status"], seconds: number, turn: TurnEnded): void;
  /** A mid-turn message reached the agent, `seconds` after it was accepted. */
  midTurnDelivered?(method: SteerMethod, seconds: number): void;
  /** The turn's usage as the agent reported it (none reported: not called), for metrics. */
  usage?(channel: string, model: string | undefined, usage: TurnUsage): void;
  /** A `stop: wait` gate was not running when `_Stop` was due (once per gate and turn), for metrics. */
  gateDown?(gate: string): void;
}

export interface DispatcherDeps {
  config: () => Config;
  self: string;
  owner: string | undefined;
  pool: AgentPool;
  link: LinkServer;
  /** The queue's side of a turn: its end, its replies, mid-turn messages handed back, an edit's target. */
  scheduler: Pick<Scheduler, "complete" | "fail" | "hold" | "recordReply" | "leaveRunning" | "storedEvent" | "shared">;
  relay: RelayPort;
  out: TurnPublisher;
  directory: TurnDirectory;
  ledger: TurnLedger;
  reports: TurnReports;
  /** Downloads the files the turn's messages attach (turn/attachment-downloads.ts); without it they are only listed. */
  attachments?: AttachmentResolver;
  enforce: Enforce;
  /** Schnorr check, for answers to the agents' questions. */
  verify(ev: Event): boolean;
  /** What a tool title may show the channel ("still working" notes); default: nothing of it. */
  redactTitle?(title: string): string;
  /** Where a scope's agent session id is kept across restarts (the queue's store). */
  sessions?: SessionIdStore;
  /** The channels' public work status (NIP-AW), for channels with `work_status: on`. */
  workStatus?: WorkStatusBoard;
  logger: Logger;
}

/** An ended turn as the status page lists it: where, who asked, and what it cost. */
export interface TurnEnded {
  turnId: number;
  channel: string;
  /** The thread's root event id: where the answer is. */
  thread: string;
  /** The pubkeys whose messages the turn answered. */
  requesters: string[];
  reason?: string;
  model?: string;
  usage?: TurnUsage;
}

/** A batch's turn as run() takes it through prepare, execute and settle. */
interface TurnRun {
  /** The batch as the queue handed it out. */
  whole: Batch;
  running: RunningEntry;
  mid: MidTurnInbox;
  /** The messages that joined the turn mid-way and reached the agent: the turn answers them too. */
  joined: string[];
  log: Logger;
  /** The config as the turn started. */
  cfg: Config;
  started: number;
}

/** A turn ready for the agent: what it answers, where, and with what standing context. */
interface PreparedTurn extends TurnRun {
  /** The part of the batch still unanswered. */
  batch: Batch;
  anchor: Event;
  thread: ThreadRef;
  channel: ChannelInfo;
  policy: Policy;
  standing: StandingInput;
}

/** What the agent's run left for settle. Filled as the turn goes: a prompt adds its usage. */
interface TurnRan {
  outcome: TurnOutcome;
  /** False for a failure a retry cannot fix (the agent breaker open). */
  retry: boolean;
  usage?: TurnUsage;
  model?: string;
  /** Why the session ends after this turn (its budget spent), if it does. */
  rotateFor?: string;
  note?: ProgressNote;
  status?: TurnStatus;
  /** The session the turn held. */
  held?: ScopeSession;
}

/** The turn's messages by id, here and in its turn.end line: which mention a turn answers, in the log. */
function turnEvents(t: TurnRun): string[] {
  return [...t.whole.events.map((e) => e.id), ...t.joined];
}

export class TurnDispatcher {
  private readonly sessions: ScopeSessions;
  private readonly running: RunningTurns;
  private readonly answers: Answers;
  private readonly builder: TurnPromptBuilder;
  /** The agents' questions back to people, waiting for answers (intake hands it the answers it hears). */
  readonly questions: QuestionDesk;
  /** Heartbeat turns take negative ids among the running turns, apart from the queue's turn ids. */
  private heartbeatSeq = 0;

  constructor(private readonly d: DispatcherDeps) {
    this.builder = new TurnPromptBuilder({
      self: d.self,
      query: (f) => d.relay.query(f),
      displayNames: (pks) => d.directory.displayNames(pks),
      attachments: d.attachments,
      logger: d.logger,
    });
    this.sessions = new ScopeSessions({
      self: d.self,
      config: d.config,
      pool: d.pool,
      link: d.link,
      relay: d.relay,
      ids: d.sessions,
      recordBeforePublish: d.ledger.recordBeforePublish,
      logger: d.logger,
    });
    this.running = new RunningTurns(d.pool);
    this.questions = new QuestionDesk({ self: d.self, relay: d.relay, out: d.out, verify: d.verify, logger: d.logger, queue: d.scheduler });
    const storedEvent = (id: string) => d.scheduler.storedEvent(id);
    const recordReply = (turnId: number, id: string) => d.scheduler.recordReply(turnId, id);
    this.answers = new Answers({
      self: d.self,
      relay: d.relay,
      out: d.out,
      storedEvent,
      recordReply,
      recordBeforePublish: d.ledger.recordBeforePublish,
      logger: d.logger,
    });
  }

  get inFlight(): number {
    return this.running.size;
  }

  /** Starts the batch's turn; resolves when it has ended and the queue knows the outcome. */
  start(batch: Batch): Promise<void> {
    // The messages that joined the turn mid-way and reached the agent: the turn answers them too.
    const joined: string[] = [];
    const mid = this.inbox(batch, joined);
    const threads = new Set(batch.events.map((e) => this.threadOf(e)));
    return this.running.run(batch.turnId, { scope: batch.scope.key, channel: batch.scope.channel }, { mid, threads }, (entry) =>
      this.run(batch, entry, mid, joined),
    );
  }

  /** The turns running now, with the agent's last activity and any gate wait. */
  runningTurns(): RunningTurn[] {
    return this.running.list();
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

  /** A message that already joined the turn in the queue (Scheduler.joinRunning) goes to the agent. */
  take(turnId: number, ev: Event, how: MidTurnHow, acceptedAt: number): void {
    this.running.get(turnId)?.mid?.take(ev, how, acceptedAt);
  }

  /** A message the session saw was deleted by its author: told to the agent in its next prompt. */
  retract(scopeKey: string, eventId: string, author: string): void {
    const ss = this.sessions.get(scopeKey);
    if (ss?.prompt.wasDelivered(eventId)) ss.prompt.retract(eventId, author);
  }

  /** `!cancel`, shutdown: ends these turns; the queue was told already by its own cancel. */
  cancelTurns(turnIds: number[]): number {
    return this.running.cancel(turnIds);
  }

  /** `!rotate`: the scopes' sessions end; the next turn opens a fresh one. */
  rotate(match: (scopeKey: string) => boolean, reason = "owner"): Promise<number> {
    return this.sessions.rotate(match, reason);
  }

  /** Waits for running turns up to `graceMs`, then cancels the rest. Returns how many were cancelled. */
  drain(graceMs: number): Promise<number> {
    return this.running.drain(graceMs);
  }

  closeSessions(): void {
    this.sessions.closeAll();
  }

  /** The failure notices of a turn that failed for good (the queue's `failed`); see Answers.postFailure. */
  postFailure(events: Event[], error: string, channel: string): Promise<void> {
    return this.answers.postFailure(events, error, channel, policyFor(this.d.config(), channel).reply_placement);
  }

  /** The thread an event belongs to (an edit: the thread of the message it edits). */
  private threadOf(ev: Event): string {
    return threadRootOf(this.anchorOf([ev]));
  }

  private anchorOf(events: Event[]): Event {
    return anchorOf(events, (id) => this.d.scheduler.storedEvent(id));
  }

  /** The mid-turn inbox of a batch's turn; its session is the scope's, once the turn has opened it. */
  private inbox(batch: Batch, joined: string[]): MidTurnInbox {
    const key = batch.scope.key;
    const live = () => this.sessions.get(key);
    const reacted = new Set<string>();
    const log = this.d.logger.child({ turn: batch.turnId, scope: key });
    return new MidTurnInbox({
      session: this.sessions.steeringPort(key),
      blocks: async (events, framing) => {
        const ss = live();
        if (!ss) throw new Error("the scope's session is gone");
        return this.builder.midTurn(ss.prompt, events, framing, this.anchorOf(events), ss.session.media);
      },
      leave: (ids) => this.d.scheduler.leaveRunning(batch.turnId, ids),
      delivered: (events, method, waited) => {
        const ss = live();
        if (ss?.current && events.length) ss.current.anchor = this.anchorOf(events).id;
        const fresh = events.filter((ev) => !reacted.has(ev.id));
        for (const ev of fresh) {
          reacted.add(ev.id);
          joined.push(ev.id);
        }
        const ids = fresh.map((ev) => ev.id);
        const claimSeen = this.d.ledger.claimSeen;
        const first = claimSeen ? claimSeen(ids).catch(() => ids) : Promise.resolve(ids);
        void first.then((seen) => {
          for (const ev of fresh) if (seen.includes(ev.id)) this.d.out.signal(reaction(ev, EMOJI.seen, batch.scope.channel));
        });
        for (const ms of waited) this.d.reports.midTurnDelivered?.(method, ms / 1000);
      },
      logger: log,
    });
  }

  /** A batch's turn: prepared, run by the agent, settled with the queue. */
  private async run(whole: Batch, running: RunningEntry, mid: MidTurnInbox, joined: string[]): Promise<void> {
    // `!rotate` reached the scope (possibly through another daemon) since this daemon last
    // ran it: the old session ends before the turn opens one.
    if (whole.rotated) await this.sessions.rotate((k) => k === whole.scope.key);
    const log = this.d.logger.child({ turn: whole.turnId, scope: whole.scope.key });
    const turn: TurnRun = { whole, running, mid, joined, log, cfg: this.d.config(), started: Date.now() };
    log.info({ evt: "turn.start", events: turnEvents(turn), attempt: whole.attempt }, "turn started");
    const prepared = await this.prepare(turn);
    if (!prepared) return;
    await this.settle(prepared, await this.execute(prepared));
  }

  /**
   * What the turn answers and where: the mentions an earlier attempt left unanswered, their
   * thread, the channel and the session's standing context. Undefined when the turn ended
   * here (all answered, or the channel is no longer ours).
   */
  private async prepare(t: TurnRun): Promise<PreparedTurn | undefined> {
    const { whole, mid, log, cfg } = t;
    const batch = await this.answers.unanswered(whole, log);
    if (batch.events.length === 0) {
      // The agent answered before the process stopped; running it again would answer twice.
      log.info(
        { evt: "turn.already_answered", replies: batch.publishedReplyIds, events: turnEvents(t) },
        "turn had already replied before the restart; not re-run",
      );
      await mid.close(true);
      this.d.scheduler.complete(batch.turnId);
      this.ended(t, "answered");
      return undefined;
    }
    const anchor = this.anchorOf(batch.events);
    const thread = replyRefFor(anchor, policyFor(cfg, batch.scope.channel).reply_placement);
    const channel = await this.d.directory.channel(batch.scope.channel);
    if (!channel) {
      await mid.close(true);
      const reason = `the bridge is no longer a member of channel ${batch.scope.channel}`;
      this.finish(batch, { status: "failed", reason, published: [] }, log, false, { events: turnEvents(t) });
      this.ended(t, "failed", { reason });
      return undefined;
    }
    const policy = policyFor(cfg, channel.id);
    const standing = await this.standingFor(cfg, channel, policy.team_instructions);
    return { ...t, batch, anchor, thread, channel, policy, standing };
  }

  /**
   * Opens (or finds) the scope's session and runs the turn in it. A session that cannot
   * open, or fails during the turn, fails the turn and is not reused.
   */
  private async execute(p: PreparedTurn): Promise<TurnRan> {
    const { batch, channel, policy, cfg, log, running, mid } = p;
    const signal = running.abort.signal;
    const ran: Omit<TurnRan, "outcome"> = { retry: true };
    // Recorded durably as it grows: a retry after a crash must know the thread was answered.
    const published = this.answers.recorded(batch.turnId);
    const turnOver = new AbortController();
    try {
      const ss = await this.sessions.open(batch.scope, channel, p.standing, log);
      ran.held = ss;
      running.session = ss.session;
      const model = (ran.model = ss.session.model);
      if (policy.work_status === "on")
        ran.status = this.d.workStatus?.begin(channel.id, { turnId: String(batch.turnId), model, titles: policy.tool_titles });
      const inflight = new InflightPublishes();
      // A tool call waiting out a relay outage waits no longer than the turn (docs/architecture.md §4).
      const over = AbortSignal.any([signal, turnOver.signal, AbortSignal.timeout(cfg.agent.max_turn)]);
      // A batch may answer more messages at once than replies.max_per_turn: one each, at least.
      const messages = { sent: 0, max: Math.max(cfg.replies.max_per_turn, batch.events.length) };
      // Posts wait for a hold_replies gate only where the bridge itself learns that the gate allowed.
      const heldPosts = this.d.enforce === "bridge" && ss.holdGates.length > 0 ? new HeldPosts(ss.holdGates) : undefined;
      ss.current = { turnId: batch.turnId, published, anchor: p.anchor.id, inflight, over, messages, stopped: signal, held: heldPosts };
      const blocks = (await this.builder.build(ss.prompt, {
        scope: batch.scope,
        channelType: channel.type,
        events: batch.events,
        anchor: p.anchor,
        standing: p.standing,
        history: policy.history,
        media: ss.session.media,
      })) as PromptBlock[];
      ss.prompt.markDelivered(batch.events.map((e) => e.id));
      const asking = this.askingFor(p);
      const note = (ran.note = new ProgressNote({
        afterMs: cfg.progress.after,
        channel: channel.id,
        thread: p.thread,
        out: this.d.out,
        redact: this.d.redactTitle ?? (() => "a tool"),
        titles: policy.tool_titles,
        logger: log,
      }));
      note.start();
      const status = ran.status;
      const prompt = async (b: PromptBlock[], _s: AbortSignal | undefined) => {
        const r = await ss.session.prompt(b, {
          ...asking,
          ...(ss.preTool.any ? { preTool: slotPreTool(ss.slot, ss.preTool.block, log) } : {}),
          onUpdate: (u) => {
            note.observe(u);
            status?.update(u);
          },
        });
        ran.usage = addUsage(ran.usage, r.turnUsage);
        ran.rotateFor = spentBudget(r.stopReason) ?? ran.rotateFor;
        return { stopReason: r.stopReason, finalText: r.finalText, compacted: r.compacted, timedOut: r.timedOut, updates: r.updates };
      };
      const outcome = await runTurn(this.turnSpec(p, blocks), {
        agent: {
          prompt: (b, s) =>
            mid.prompt(
              b,
              (blocks) => prompt(blocks, s),
              () => signal.aborted,
            ),
        },
        hooks: this.d.enforce === "bridge" && ss.hookServers > 0 ? slotHooks(ss.slot, log) : undefined,
        out: this.answers.publisherFor(batch.turnId),
        logger: log,
        published,
        held: heldPosts,
        settled: () => inflight.settled(),
        signal,
        onGateWait: (gates) => (running.info.gateWait = gates ? { gates, since: Date.now() } : undefined),
        onGateDown: (gate) => this.d.reports.gateDown?.(gate),
        pendingInjection: {
          take: () => {
            const t = ss.injection;
            ss.injection = undefined;
            return t;
          },
          set: (t) => (ss.injection = t),
        },
      });
      ss.current = undefined;
      turnOver.abort();
      for (const id of published) ss.prompt.markDelivered([id]);
      ran.rotateFor = this.sessions.turnDone(ss, ran.rotateFor, cfg.agent.max_turns_per_session);
      return Object.assign(ran, { outcome });
    } catch (err) {
      // The breaker open (now, or by this very failure): a retry within its window cannot
      // succeed, so the thread hears at once what happened instead of after the retry wait.
      const circuit = this.d.pool.circuitError();
      const reason = circuit?.message ?? (err instanceof Error ? err.message : String(err));
      log.warn({ evt: "turn.start_failed", err: err instanceof Error ? err.message : String(err) }, "could not start the turn");
      turnOver.abort();
      const outcome: TurnOutcome = { status: "failed", reason, published: [...published] };
      if (circuit) ran.retry = false;
      // A session that failed to open or crashed is not reused.
      await this.sessions.rotate((k) => k === batch.scope.key);
      return Object.assign(ran, { outcome });
    }
  }

  /** What runTurn needs to know of the turn: where it answers, what it says first, and the config's bounds. */
  private turnSpec(p: PreparedTurn, blocks: PromptBlock[]): TurnSpec {
    const { batch, channel, policy, cfg } = p;
    return {
      turnId: String(batch.turnId),
      channel: channel.id,
      thread: p.thread,
      triggers: batch.events,
      blocks,
      replyFallback: policy.reply_fallback,
      maxReplyBytes: cfg.replies.max_bytes,
      typing: cfg.relay.typing,
      firstSeen: this.d.ledger.claimSeen,
      contentLimit: this.d.relay.contentLimit?.(),
      enforce: this.d.enforce,
      gates: {
        maxRejections: cfg.gates.max_rejections,
        waitPollMs: cfg.gates.wait_poll,
        waitMaxMs: cfg.gates.wait_max,
        stopModes: Object.fromEntries(Object.entries(cfg.mcp.servers).map(([n, s]) => [n, s.stop])),
        waitGates: waitGatesOf(manifestFromConfig(cfg.mcp, policy.mcp).servers),
      },
    };
  }

  /** How the turn's agent asks people (questions, the owner's permission), through the question desk. */
  private askingFor(p: PreparedTurn): ReturnType<typeof turnAsking> {
    const { cfg, log } = p;
    const signal = p.running.abort.signal;
    return turnAsking(this.questions, {
      channel: p.channel.id,
      // A question waits for its answer in the asked message's thread, also where answers
      // are flat: people answer it there, and a restart finds it there.
      thread: { root: p.thread.root, parent: p.thread.parent, ...(p.thread.forum ? { forum: true } : {}) },
      owner: this.d.owner,
      requester: p.anchor.pubkey,
      answeredBy: cfg.questions.answered_by,
      firstEvent: firstOf(p.batch.events).id,
      questionTimeoutMs: cfg.questions.timeout,
      permissionTimeoutMs: cfg.agent.permission_timeout,
      shuttingDown: () => signal.aborted && signal.reason === "shutdown",
      logger: log,
    });
  }

  /**
   * After the agent: the session, work status and progress note let go, mid-turn messages
   * it never took handed back, the session ended if due, and the outcome told to the queue
   * (a shutdown leaves the turn running in the store, to run again after the restart).
   */
  private async settle(p: PreparedTurn, ran: TurnRan): Promise<void> {
    const { batch, log, mid } = p;
    const signal = p.running.abort.signal;
    const { outcome } = ran;
    ran.held?.session.unhold();
    ran.status?.end(outcome.status === "failed" ? "error" : "complete", outcome.status === "answered" ? undefined : outcome.status);
    await ran.note?.finish();
    // Mid-turn messages never given to the agent wait for the next turn; a cancelled turn
    // ended them (owner), a shutdown leaves them in the turn to run again after the restart.
    await mid.close(!signal.aborted);
    if (ran.usage) this.d.reports.usage?.(p.channel.id, ran.model, ran.usage);
    // The session ends after its turn budget, or when the agent ran out of context or
    // requests: the next mention in the scope starts a fresh session.
    await this.sessions.rotateIfDue(batch.scope.key, ran.rotateFor);
    if (signal.aborted && signal.reason === "shutdown") {
      // Left running in the store: the next start re-queues it (its one retry), nothing is lost.
      log.info(
        { evt: "turn.interrupted", published: outcome.published.length },
        "turn interrupted by shutdown; it runs again after restart",
      );
      return;
    }
    this.finish(batch, outcome, log, ran.retry, { model: ran.model, usage: ran.usage, events: turnEvents(p) });
    this.ended(p, outcome.status, { reason: outcome.status === "failed" ? outcome.reason : undefined, model: ran.model, usage: ran.usage });
  }

  /** The turn's end for metrics and the status page's recent turns. */
  private ended(t: TurnRun, outcome: TurnOutcome["status"], extra: Pick<TurnEnded, "reason" | "model" | "usage"> = {}): void {
    const { whole } = t;
    this.d.reports.turnEnded?.(outcome, (Date.now() - t.started) / 1000, {
      turnId: whole.turnId,
      channel: whole.scope.channel,
      thread: threadRootOf(this.anchorOf(whole.events)),
      requesters: [...new Set(whole.events.map((e) => e.pubkey))].filter((pk) => pk !== this.d.self),
      ...extra,
    });
  }

  private finish(
    batch: Batch,
    outcome: TurnOutcome,
    log: Logger,
    retry: boolean,
    extra: { model?: string; usage?: TurnUsage; events?: string[] } = {},
  ): void {
    log.info(
      {
        evt: "turn.end",
        status: outcome.status,
        reason: outcome.status === "failed" ? outcome.reason : undefined,
        published: outcome.published.length,
        via: outcome.status === "answered" ? outcome.via : undefined,
        model: extra.model,
        usage: extra.usage,
        events: extra.events,
      },
      "turn ended",
    );
    if (outcome.status === "failed" && outcome.provider && outcome.published.length === 0) {
      const p = outcome.provider;
      const step = providerStep(p, this.d.config());
      log.warn(
        { evt: "turn.provider_error", class: p.class, until: p.until ? new Date(p.until).toISOString() : undefined, detail: p.detail },
        `the model provider failed the turn (${p.class})`,
      );
      if (step.kind === "final") return void this.d.scheduler.fail(batch.turnId, step.reason, { retry: false });
      if (step.kind === "hold") {
        const until = this.d.scheduler.hold(batch.turnId, step.until, `held for the provider's limit: ${p.detail}`);
        if (until !== undefined) void this.holdNotice(batch, holdNotice(until, step.guessed), log);
        return;
      }
    }
    if (outcome.status === "failed") {
      // A failed turn that already replied in its one thread is not retried: the reply is
      // the answer, marked ⚠️. A batch from several threads may have answered only some of
      // them: it is retried, and the retry runs only for the mentions still unanswered.
      const threads = new Set(batch.events.map((e) => threadRootOf(e))).size;
      if (outcome.published.length > 0 && threads === 1) {
        this.d.scheduler.complete(batch.turnId);
        this.answers.markFailed(batch.events, batch.scope.channel);
      } else this.d.scheduler.fail(batch.turnId, outcome.reason, { retry }); // final → postFailure
    } else this.d.scheduler.complete(batch.turnId);
  }

  /** The one notice of a held turn, in its thread, to the people who asked; marked as no answer. */
  private async holdNotice(batch: Batch, text: string, log: Logger): Promise<void> {
    const anchor = this.anchorOf(batch.events);
    const ev = message(batch.scope.channel, text, {
      thread: replyRefFor(anchor),
      mentions: requesters({ triggers: batch.events }),
      extraTags: [[...PROGRESS_TAG]],
    });
    await this.d.out.publish(ev).catch((err: unknown) => log.warn({ evt: "turn.hold_notice_failed", err: String(err) }));
  }

  /** The standing context of a session in `channel` (a mention's turn or a heartbeat). */
  private async standingFor(cfg: Config, channel: ChannelInfo, teamInstructions: string): Promise<StandingInput> {
    return {
      channel: { id: channel.id, name: channel.name, about: channel.about },
      persona: cfg.agent.persona,
      teamInstructions,
      owner: this.d.owner ? { pubkey: this.d.owner, name: await this.d.directory.displayName(this.d.owner) } : undefined,
    };
  }

  /**
   * A heartbeat turn (`heartbeat-turn.ts`). It counts as a turn in flight, so `!status`
   * shows it and shutdown drains it like any other.
   */
  heartbeat(channelId: string, text: string): Promise<TurnOutcome["status"] | "no-channel"> {
    const deps = {
      config: this.d.config,
      sessions: this.sessions,
      channel: (id: string) => this.d.directory.channel(id),
      standing: this.standingFor.bind(this),
      onUsage: this.d.reports.usage,
      logger: this.d.logger,
    };
    const info = { scope: heartbeatScope(channelId), channel: channelId };
    return this.running.run(--this.heartbeatSeq, info, {}, (entry) => runHeartbeat(deps, entry, channelId, text));
  }
}

/** The oldest of a batch's events (ties by id): the same after a restart, whatever order the queue gives. */
function firstOf(events: Event[]): Event {
  return events.reduce((a, b) => (b.created_at < a.created_at || (b.created_at === a.created_at && b.id < a.id) ? b : a));
}
