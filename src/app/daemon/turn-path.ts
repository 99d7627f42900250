/**
 * The daemon's middle: the parts a mention passes through once the relay delivered it
 * (docs/architecture.md §3): gate, scheduler, turn dispatcher, amendments and intake,
 * built and connected over the lower parts the daemon started (relay, the queue's backend,
 * this machine's own store, agent pool, link). Wiring only, like daemon.ts.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { AgentPool } from "../../agent/pool.js";
import type { Logger } from "../../base/log.js";
import type { Enforce } from "../../config/enforce.js";
import { agentDisplay } from "../../config/agent-command.js";
import type { Config } from "../../config/schema.js";
import { ControlExecutor, DeniedReporter, Gate, SiblingCheck, type GateContext } from "../../gate/index.js";
import { ActiveConversations, agentCheck, isAgentProfile } from "../../gate/participation.js";
import { LoopGuard } from "../../gate/loop-guard.js";
import type { LinkServer } from "../../link/index.js";
import { Scheduler, type QueueBackend, type SqliteStore } from "../../queue/index.js";
import type { RelayClient } from "../../relay/client.js";
import type { Publisher } from "../../relay/publisher.js";
import type { ChannelDirectory } from "../../buzz/directory.js";
import type { FreshChannels } from "../../buzz/fresh-channel.js";
import { KIND } from "../../nostr/kinds.js";
import type { ProfileCache } from "../../buzz/profiles.js";
import { verifySignature } from "../../nostr/verify.js";
import { verifyWake } from "../../nostr/workflow.js";
import { Amendments } from "../../intake/amend.js";
import { controlActions } from "../../intake/control-actions.js";
import { TurnDispatcher } from "../../turn/dispatch.js";
import { TurnAttachments } from "../../turn/attachment-downloads.js";
import { redactTitle, type RedactOptions } from "../../turn/redact-title.js";
import { MediaFetcher } from "../../buzz/media-fetch.js";
import { uploadBlob } from "../../buzz/media-upload.js";
import { recordReplyDurably } from "../../turn/reply-record.js";
import { decisionLabel, Intake } from "../../intake/intake.js";
import { joinMidTurn } from "../../intake/mid-turn-join.js";
import type { TurnPublisher } from "../../turn/ports.js";
import { refusalNotice } from "../../intake/refusal-notice.js";
import type { RecentDenials } from "./daemon-status.js";
import type { RecentTurns } from "./recent-turns.js";
import type { Metrics } from "../http/metrics.js";
import type { UsageToday } from "./usage-today.js";
import type { WorkStatusBoard } from "../../turn/work-status.js";

export interface TurnPathParts {
  /** The running config (a reload replaces it); `start` is the one the daemon started with. */
  config: () => Config;
  start: Config;
  /** What tool titles shown in the channel must not carry ("still working" notes). */
  titleRedaction: RedactOptions;
  pubkey: string;
  relay: RelayClient;
  /** The daemon's one publisher: the agent's own messages and reactions leave through it too. */
  publisher: Publisher;
  directory: ChannelDirectory;
  profiles: ProfileCache;
  channels: FreshChannels;
  out: TurnPublisher;
  /** The queue: the SQLite store itself, or with `state.backend: postgres` the fleet's database. */
  backend: QueueBackend;
  /** This machine's own state: the relay cursor, agent session ids, what the gate accepted and denied. */
  local: SqliteStore;
  pool: AgentPool;
  link: LinkServer;
  enforce: Enforce;
  metrics: Metrics;
  usage: UsageToday;
  denials: RecentDenials;
  recentTurns: RecentTurns;
  /** The queue has work a turn may start: the daemon starts what it allows. */
  pump: () => void;
  stopping: () => boolean;
  /** `!shutdown`. */
  shutdown: () => void;
  /** The channels' public work status (NIP-AW 30181). */
  workStatus?: WorkStatusBoard;
  /** The other agents of its team (team.ts). */
  teammates?: () => string[];
  logger: Logger;
}

export interface TurnPath {
  scheduler: Scheduler;
  dispatcher: TurnDispatcher;
  /** The gate's view of the config, replaced on reload. */
  gateContext: GateContext;
  intake: Intake;
  /** The conversations the agent is in (participation), rebuilt from the relay at start. */
  active: ActiveConversations;
  /** Resolves once the gate's answers under way (a claimed 🔒) are published: a stop waits for it. */
  answersSettled: () => Promise<void>;
  /** No more answers claimed (the daemon is stopping); those claimed still go out (answersSettled). */
  closeAnswers: () => void;
}

export function buildTurnPath(p: TurnPathParts): TurnPath {
  const { start: cfg, pubkey, relay, backend, local, out, logger: log } = p;
  const agentKey = agentDisplay(cfg.agent);

  const scheduler = new Scheduler({
    backend,
    daemon: {
      id: `${hostname()}/${process.pid}/${randomBytes(3).toString("hex")}`,
      host: hostname(),
      pid: process.pid,
      maxConcurrent: cfg.agent.max_concurrent,
    },
    sessionScope: cfg.agent.session_scope,
    maxConcurrent: cfg.agent.max_concurrent,
    maxAttempts: cfg.queue.max_attempts,
    holdMaxMs: cfg.queue.hold_max,
    scopeCap: cfg.queue.scope_cap,
    // Second retry waits retry_max: 5 s then 5 min by default, as the Rust bridge does.
    backoff: { baseMs: cfg.queue.retry_base, factor: Math.max(1, cfg.queue.retry_max / cfg.queue.retry_base), maxMs: cfg.queue.retry_max },
    logger: log,
    confirmPublished: (ids) => relay.storedAmong(ids, p.config().relay.publish_timeout),
  });
  const dispatcher = new TurnDispatcher({
    config: p.config,
    self: pubkey,
    owner: cfg.identity.owner,
    pool: p.pool,
    link: p.link,
    scheduler,
    relay: {
      sign: (t) => p.publisher.sign(t),
      publish: (ev, wait) => p.publisher.publish(ev, { wait }),
      query: (f, wait) => relay.query(f, wait),
      upload: (bytes, type) => uploadBlob({ relayOrigin: relay.http.origin, key: (t) => relay.sign(t) }, bytes, type),
      contentLimit: () => relay.contentLimit(),
    },
    out,
    directory: {
      channel: (id) => p.channels.get(id),
      displayName: async (pk) => (await p.profiles.resolve([pk]).catch(() => new Map())).get(pk)?.displayName,
      displayNames: async (pks) => new Map([...(await p.profiles.resolve(pks)).values()].map((x) => [x.pubkey, x.displayName])),
    },
    ledger: {
      recordBeforePublish: recordReplyDurably((turnId, id) => scheduler.recordBeforePublish(turnId, id), log),
      claimSeen: (ids) => backend.claimFirst(ids.map((id) => `seen:${id}`)).then((keys) => keys.map((k) => k.slice("seen:".length))),
    },
    reports: {
      turnEnded: (status, seconds, turn) => {
        p.metrics.turnEnded(status, seconds);
        p.recentTurns.add(status, seconds, turn);
      },
      midTurnDelivered: (method, seconds) => p.metrics.midTurnDelivered(method, seconds),
      gateDown: (gate) => p.metrics.gateDown(gate),
      usage: (channel, model, usage) => {
        p.metrics.turnUsage(channel, model, usage);
        p.usage.add(channel, model, usage);
      },
    },
    attachments: new TurnAttachments({
      fetcher: new MediaFetcher({
        relayOrigin: relay.http.origin,
        key: (t) => relay.sign(t),
        settings: () => ({ allowHosts: p.config().attachments.allow_hosts, timeoutMs: p.config().attachments.timeout }),
      }),
      config: () => p.config().attachments,
      logger: log,
    }),
    enforce: p.enforce,
    verify: verifySignature,
    redactTitle: (t) => redactTitle(t, p.titleRedaction),
    sessions: {
      get: (scope) => local.session(scope, agentKey),
      save: (scope, id) => local.saveSession(scope, agentKey, id),
      forget: (scope) => local.forgetSession(scope),
    },
    workStatus: p.workStatus,
    logger: log,
  });
  // What the queue tells (scheduler.ts, SchedulerEvents); it runs no pass before the daemon starts it.
  scheduler.on("ready", p.pump);
  scheduler.on("failed", (f) => void dispatcher.postFailure(f.events, f.error, f.scope.channel));
  scheduler.on("refused", (r) => void out.publish(refusalNotice(r)));
  scheduler.on("lost", (turnIds) => dispatcher.cancelTurns(turnIds));

  const owner = () => p.config().identity.owner;
  const amendments = new Amendments({
    store: backend,
    scheduler,
    cancelTurns: (ids) => void dispatcher.cancelTurns(ids),
    retract: (scope, id, author) => dispatcher.retract(scope, id, author),
    midTurn: (ev, scope, mode) => joinMidTurn({ scheduler, dispatcher, owner, logger: log }, ev, scope, mode),
    ownReactions: (id) => relay.query([{ kinds: [KIND.reaction], authors: [pubkey], "#e": [id], limit: 20 }]),
    out,
    logger: log,
  });

  const gateContext: GateContext = {
    self: pubkey,
    owner: cfg.identity.owner,
    config: cfg,
    channel: (id) => p.directory.get(id),
    // What this daemon's gate accepted (in a fleet the queue may have it from another daemon).
    handled: (id) => local.isAccepted(id),
    verify: verifySignature,
    // The relay's key as read since the last reconnect: a read under way is waited for.
    workflowWake: async (ev) => {
      await relay.relayInfo.settled();
      return verifyWake(ev, {
        relaySelf: relay.info.self,
        previousSelves: relay.relayInfo.previousSelves,
        agent: pubkey,
        owner: gateContext.owner,
      });
    },
  };
  const active = new ActiveConversations({ store: backend, logger: log });
  // An agent by what the daemon already holds: a teammate, or a `bot` seat in a roster it reads.
  const seated = (pk: string) => (p.teammates?.() ?? []).includes(pk) || p.directory.list().some((c) => c.bots?.includes(pk));
  gateContext.participation = {
    active,
    isAgent: agentCheck((pk) => p.profiles.lookup(pk), 2000, seated),
    agentNow: (pk) => {
      if (seated(pk)) return true;
      const known = p.profiles.peek(pk);
      return known ? isAgentProfile(known) : undefined;
    },
  };
  gateContext.loop = new LoopGuard({ limit: () => p.config().policy.bot_exchanges, logger: log });
  if (cfg.identity.owner) {
    const siblings = new SiblingCheck({ owner: cfg.identity.owner, lookup: (pk) => p.profiles.lookup(pk) });
    gateContext.sibling = (author, ev) => siblings.check(author, ev);
  }
  const actions = controlActions({
    scheduler,
    dispatcher,
    sessions: local,
    usage: () => p.usage.summary(),
    shutdown: p.shutdown,
  });
  const reporter = new DeniedReporter({
    logger: log,
    publish: (t) => out.publish(t),
    verify: verifySignature,
    claimOnce: (key, ms) => backend.claimOnce(key, ms),
  });
  const gate = new Gate({
    context: gateContext,
    reporter,
    control: new ControlExecutor({ self: pubkey, actions, publish: (t) => out.publish(t), logger: log }),
    logger: log,
    claimControl: (id, at) => backend.claimControl(id, at),
    firstDenial: (id) => local.markDenied(id),
    noteSeen: (ch, at) => local.noteSeen(ch, at),
  });
  const intake = new Intake({
    gate,
    scheduler,
    dispatcher,
    amendments,
    questions: dispatcher.questions,
    questionTimeout: () => p.config().questions.timeout,
    active,
    self: pubkey,
    local,
    owner,
    stopping: p.stopping,
    onReceived: (ev) => p.metrics.eventReceived(ev.kind),
    onDecided: (ev, d) => {
      p.metrics.gateDecision(d.action, decisionLabel(d));
      if (d.action === "deny") p.denials.add({ at: Date.now(), channel: d.channel?.id, author: ev.pubkey, reason: d.reason });
    },
    logger: log,
  });
  return {
    scheduler,
    dispatcher,
    gateContext,
    intake,
    active,
    answersSettled: () => reporter.settled(),
    closeAnswers: () => reporter.close(),
  };
}
