/**
 * The daemon's middle: the parts a mention passes through once the relay delivered it
 * (docs/architecture.md §3): gate, scheduler (single or fleet), turn dispatcher,
 * amendments and intake, built and connected over the lower parts the daemon started
 * (relay, stores, agent pool, link). Wiring only, like daemon.ts.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { AgentPool } from "../../agent/pool.js";
import type { Logger } from "../../base/log.js";
import type { Enforce } from "../../config/enforce.js";
import { agentDisplay } from "../../config/agent-command.js";
import type { Config } from "../../config/schema.js";
import { ControlExecutor, DeniedReporter, Gate, SiblingCheck, type GateContext } from "../../gate/index.js";
import { ActiveConversations, agentCheck } from "../../gate/participation.js";
import type { LinkServer } from "../../link/index.js";
import { FleetScheduler } from "../../queue/fleet-scheduler.js";
import { Scheduler, type FinalFailure, type QueueRefusal, type QueueStore } from "../../queue/index.js";
import type { PostgresStore } from "../../queue/pg-store.js";
import { SqliteStateStore } from "../../queue/sqlite-state.js";
import type { RelayClient } from "../../relay/client.js";
import type { ChannelDirectory } from "../../buzz/directory.js";
import type { FreshChannels } from "../../buzz/fresh-channel.js";
import { KIND } from "../../nostr/kinds.js";
import type { ProfileCache } from "../../buzz/profiles.js";
import { verifySignature } from "../../nostr/verify.js";
import { verifyWake } from "../../nostr/workflow.js";
import { Amendments } from "../../turn/amend.js";
import { controlActions } from "../../turn/control-actions.js";
import { TurnDispatcher } from "../../turn/dispatch.js";
import { TurnAttachments } from "../../turn/attachments.js";
import { redactTitle, type RedactOptions } from "../../turn/redact-title.js";
import { MediaFetcher } from "../../buzz/media-fetch.js";
import { uploadBlob } from "../../buzz/media-upload.js";
import { recordReplyDurably } from "../../turn/fleet-reply.js";
import { decisionLabel, Intake } from "../../turn/intake.js";
import type { TurnPublisher } from "../../turn/ports.js";
import { refusalNotice } from "../../turn/refusal-notice.js";
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
  directory: ChannelDirectory;
  profiles: ProfileCache;
  channels: FreshChannels;
  out: TurnPublisher;
  store: QueueStore;
  fleet?: PostgresStore;
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
  logger: Logger;
}

export interface TurnPath {
  scheduler: Scheduler | FleetScheduler;
  dispatcher: TurnDispatcher;
  /** The gate's view of the config, replaced on reload. */
  gateContext: GateContext;
  intake: Intake;
  /** The conversations the agent is in (participation), rebuilt from the relay at start. */
  active: ActiveConversations;
}

export function buildTurnPath(p: TurnPathParts): TurnPath {
  const { start: cfg, pubkey, relay, store, fleet, out, logger: log } = p;
  const agentKey = agentDisplay(cfg.agent);
  // Built below; the schedulers' callbacks run only after it is.
  let dispatcher: TurnDispatcher;

  // What both schedulers share. Second retry waits retry_max: 5 s then 5 min by default, as the Rust bridge does.
  const turns = {
    sessionScope: cfg.agent.session_scope,
    maxConcurrent: cfg.agent.max_concurrent,
    maxAttempts: cfg.queue.max_attempts,
    scopeCap: cfg.queue.scope_cap,
    backoff: { baseMs: cfg.queue.retry_base, factor: Math.max(1, cfg.queue.retry_max / cfg.queue.retry_base), maxMs: cfg.queue.retry_max },
    logger: log,
    onWake: p.pump,
    onFinalFailure: (f: FinalFailure) => void dispatcher.postFailure(f.events, f.error, f.scope.channel),
    onRefused: (r: QueueRefusal) => void out.publish(refusalNotice(r)),
  };
  const scheduler = fleet
    ? new FleetScheduler({
        store: fleet,
        daemon: {
          id: `${hostname()}/${process.pid}/${randomBytes(3).toString("hex")}`,
          host: hostname(),
          pid: process.pid,
          maxConcurrent: cfg.agent.max_concurrent,
        },
        ...turns,
        confirmPublished: (ids) => relay.storedAmong(ids, p.config().relay.publish_timeout),
        onLost: (turnIds) => dispatcher.cancelTurns(turnIds),
        onRotate: async (key) => void (await dispatcher.rotate((k) => k === key)),
      })
    : new Scheduler({ store, ...turns });
  dispatcher = new TurnDispatcher({
    config: p.config,
    self: pubkey,
    owner: cfg.identity.owner,
    pool: p.pool,
    link: p.link,
    scheduler,
    relay: {
      sign: (t) => relay.sign(t),
      publish: (ev) => relay.publishConfirmed(ev),
      query: (f) => relay.query(f),
      upload: (bytes, type) => uploadBlob({ relayOrigin: relay.http.origin, key: (t) => relay.sign(t) }, bytes, type),
      contentLimit: () => relay.contentLimit(),
    },
    out,
    channel: (id) => p.channels.get(id),
    displayName: async (pk) => (await p.profiles.resolve([pk]).catch(() => new Map())).get(pk)?.displayName,
    attachments: new TurnAttachments({
      fetcher: new MediaFetcher({
        relayOrigin: relay.http.origin,
        key: (t) => relay.sign(t),
        settings: () => ({ allowHosts: p.config().attachments.allow_hosts, timeoutMs: p.config().attachments.timeout }),
      }),
      config: () => p.config().attachments,
      logger: log,
    }),
    displayNames: async (pks) => new Map([...(await p.profiles.resolve(pks)).values()].map((x) => [x.pubkey, x.displayName])),
    enforce: p.enforce,
    verify: verifySignature,
    redactTitle: (t) => redactTitle(t, p.titleRedaction),
    sessions: {
      get: (scope) => store.session(scope, agentKey),
      save: (scope, id) => store.saveSession(scope, agentKey, id),
      forget: (scope) => store.forgetSession(scope),
    },
    recordBeforePublish: fleet && recordReplyDurably((turnId, id) => (scheduler as FleetScheduler).recordBeforePublish(turnId, id), log),
    logger: log,
    onTurnEnd: (status, seconds, turn) => {
      p.metrics.turnEnded(status, seconds);
      p.recentTurns.add(status, seconds, turn);
    },
    onMidTurnDelivered: (method, seconds) => p.metrics.midTurnDelivered(method, seconds),
    onGateDown: (gate) => p.metrics.gateDown(gate),
    onUsage: (channel, model, usage) => {
      p.metrics.turnUsage(channel, model, usage);
      p.usage.add(channel, model, usage);
    },
    workStatus: p.workStatus,
  });

  // In a fleet the queued events live in the shared database.
  const state = fleet ?? new SqliteStateStore(store);
  const amendments = new Amendments({
    store: state,
    scheduler,
    fleet: !!fleet,
    cancelTurns: (ids) => void dispatcher.cancelTurns(ids),
    retract: (scope, id, author) => dispatcher.retract(scope, id, author),
    midTurn: (ev, scope, mode) => intake.midTurn(ev, scope, mode),
    ownReactions: (id) => relay.query([{ kinds: [KIND.reaction], authors: [pubkey], "#e": [id], limit: 20 }]),
    out,
    logger: log,
  });

  const gateContext: GateContext = {
    self: pubkey,
    owner: cfg.identity.owner,
    config: cfg,
    channel: (id) => p.directory.get(id),
    // In a fleet the event may be stored by another daemon: each daemon notes what its gate accepted.
    handled: (id) => store.has(id) || (!!fleet && store.hasClaim(`accepted:${id}`)),
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
  const active = new ActiveConversations({ store: state, logger: log });
  gateContext.participation = { active, isAgent: agentCheck((pk) => p.profiles.lookup(pk)) };
  if (cfg.identity.owner) {
    const siblings = new SiblingCheck({ owner: cfg.identity.owner, lookup: (pk) => p.profiles.lookup(pk) });
    gateContext.sibling = (author, ev) => siblings.check(author, ev);
  }
  const actions = controlActions({
    scheduler,
    dispatcher,
    sessions: store,
    bumpRotation: fleet && ((key) => fleet.bumpRotation(key)),
    usage: () => p.usage.summary(),
    shutdown: p.shutdown,
  });
  const gate = new Gate({
    context: gateContext,
    reporter: new DeniedReporter({
      logger: log,
      publish: (t) => out.publish(t),
      verify: verifySignature,
      claimOnce: fleet && ((key, ms) => fleet.claimOnce(key, ms)),
    }),
    control: new ControlExecutor({ self: pubkey, actions, publish: (t) => out.publish(t), logger: log }),
    logger: log,
    claimControl: (id, at) => (fleet ? fleet.claimControl(id, at) : store.claimControl(id, at)),
    noteSeen: (ch, at) => store.noteSeen(ch, at),
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
    store,
    fleet: !!fleet,
    owner: () => p.config().identity.owner,
    stopping: p.stopping,
    onReceived: (ev) => p.metrics.eventReceived(ev.kind),
    onDecided: (ev, d) => {
      p.metrics.gateDecision(d.action, decisionLabel(d));
      if (d.action === "deny") p.denials.add({ at: Date.now(), channel: d.channel?.id, author: ev.pubkey, reason: d.reason });
    },
    logger: log,
  });
  return { scheduler, dispatcher, gateContext, intake, active };
}
