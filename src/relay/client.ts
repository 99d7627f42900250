/**
 * RelayClient: what the daemon holds of the relay (docs/protocol.md §5). One connection with two
 * subscriptions (every channel in ONE REQ, membership notifications in another), resubscribe
 * from the last handled `created_at` − 5 s, de-duplication by id, publishing with typed
 * outcomes, and the NIP-98 HTTP bridge for reads.
 *
 * The relay's NIP-11 document is read at start and after every (re)connect (nip11.ts): its
 * limits shape the frame budget and the size replies are split at, its connection lifetime
 * makes the client replace its socket before the relay's deadline (lifetime.ts), and its
 * `self` is the only key whose workflow output may wake the agent. The identity's sockets
 * and its HTTP bridge share one frame budget and one rate-limit pause, as Buzz counts them
 * in one bucket per key (docs/protocol.md §7).
 *
 * Events reach `on('event')` de-duplicated, shape- and id-checked and scoped to what we asked
 * for, but NOT signature-verified unless `verifySignatures` is on: the gate verifies only the
 * events it acts on (`verifySignature` from verify.ts). Membership notifications are acted on
 * here, so they are always verified.
 */
import { EventEmitter } from "node:events";
import type { Event, EventTemplate, VerifiedEvent } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import type { Logger } from "../base/log.js";
import { silentLogger } from "../base/log.js";
import { newConnectionMetrics, RelayConnection, type ConnectionOptions, type ConnectionState } from "./connection.js";
import { BUZZ_FRAME_QUOTA, FrameBudget, type FrameQuota } from "./frame-budget.js";
import { RatePause } from "./rate-pause.js";
import { RelayInfoSource } from "./nip11.js";
import { LifetimePlanner } from "./lifetime.js";
import { ShortLives } from "./short-lives.js";
import { contentRoom, type RelayInfo } from "../nostr/nip11.js";
import { TwoGenerationDedupe } from "./dedupe.js";
import { Coalescer, type CoalesceOptions } from "./coalesce.js";
import { channelOf } from "../nostr/events.js";
import {
  channelFilters,
  isMembershipFor,
  isRequested,
  membershipFilter,
  SUB_CHANNELS,
  SUB_MEMBERSHIP,
  type ChannelSubscription,
} from "../nostr/filters.js";
import { RelayHttp, type RelayHttpOptions } from "./http.js";
import { isRelayOutage, RelayHttpError, RelayQueryError } from "./errors.js";
import { retry } from "../base/retry.js";
import { OUTAGE_PAUSE_CAP_MS, waiting, type OutageWait } from "./outage.js";
import { eventShapeProblem } from "../nostr/validate.js";
import { KIND } from "../nostr/kinds.js";
import { LogThrottle } from "../base/log-throttle.js";
import type { PublishOutcome } from "./outcome.js";
import { publishWithRetry, type PublishOptions } from "./publish.js";
import { storedAmong } from "./confirm.js";
import { initCrypto, signEvent, verifySignature } from "../nostr/verify.js";
import { nowSec } from "../base/time.js";
import { pubkeyOf } from "../config/keys.js";

/** Supplies the resubscribe cursor from durable state (the queue's store); unix seconds. */
interface CursorProvider {
  get(): number | undefined;
}

export interface RelayClientOptions {
  /** `ws://host:port` or `wss://host`. */
  url: string;
  secretKey: Uint8Array;
  logger?: Logger;
  /** Durable cursor; without one the last handled `created_at` is kept in memory. */
  cursor?: CursorProvider;
  /** Overlap when resubscribing. Default 5 s (buzz-acp SINCE_SKEW_SECS): catches same-second events. */
  sinceSkewSec?: number;
  /** Ids remembered for de-duplication. Default 12 000 (buzz-acp). */
  dedupeCapacity?: number;
  /** Verify every channel event before emitting. Default false: the gate verifies what it acts on. */
  verifySignatures?: boolean;
  /** Timing of the connection (backoff, ping, auth waits) and its frame quota; defaults suit production. */
  connection?: Omit<ConnectionOptions, "url" | "secretKey" | "logger" | "budget" | "gate" | "metrics">;
  /**
   * This client's part of the key's frame quota (config `relay.frame_quota.share`): a fleet's
   * daemons share one bucket at the relay, so each takes a fraction of it. Default 1.
   */
  frameShare?: number;
  /** Read the relay's NIP-11 document at start and after reconnects. Default true. */
  readRelayInfo?: boolean;
  /** HTTP bridge retry settings. */
  http?: Omit<RelayHttpOptions, "url" | "secretKey" | "logger">;
  /** Defaults for `publish`. */
  publish?: PublishOptions;
  /**
   * Channel-set changes closer together than `quietMs` go out as one replacement REQ, at the
   * latest `maxMs` after the first. Default 300 ms / 1 s: a start-up or a burst of joins costs
   * one or two frames of the relay's quota, and a new channel is listened to within a second.
   * The quiet time is longer than the directory's lookup batches (≤ 250 ms apart), so a steady
   * trickle of joins is not cut into a frame per batch.
   */
  coalesce?: CoalesceOptions;
}

export interface EventContext {
  channel: string;
  /** False while the relay is still replaying stored events for the current REQ. */
  live: boolean;
}

export interface MembershipChange {
  type: "added" | "removed";
  channel: string;
  /** The notification's created_at: subscribe to an added channel from here. */
  at: number;
  event: Event;
}

export interface RelayClientEvents {
  event: [ev: Event, ctx: EventContext];
  membership: [change: MembershipChange];
  state: [state: ConnectionState];
  "auth-failed": [reason: string];
}

export class RelayClient extends EventEmitter<RelayClientEvents> {
  readonly pubkey: string;
  readonly http: RelayHttp;
  readonly counters = { emitted: 0, duplicates: 0, unrequested: 0, badSignatures: 0, membership: 0 };
  /** The relay's NIP-11 document, re-read after every (re)connect. */
  readonly relayInfo: RelayInfoSource;
  /** The socket in use; replaced before the relay's connection lifetime ends. */
  private conn: RelayConnection;
  private readonly budget: FrameBudget;
  private readonly gate: RatePause;
  private readonly connMetrics = newConnectionMetrics();
  /** Sockets the relay ends within moments are paced, while there is a frame quota to spare (short-lives.ts). */
  private readonly shortLives: ShortLives;
  private readonly planner: LifetimePlanner;
  /** The configured quota, before the relay's own statement and this client's share. */
  private readonly configuredQuota: FrameQuota | null;
  /** Every subscription, so a successor socket carries the same ones. */
  private readonly subs = new Map<string, () => Filter[]>();
  private readonly channelsEoseWaiters = new Set<() => void>();
  private readonly log: Logger;
  private readonly throttle: LogThrottle;
  private readonly dedupe: TwoGenerationDedupe;
  private readonly skew: number;
  private channels = new Map<string, ChannelSubscription>();
  private channelsKey = "";
  private floorsSent = new Set<string>();
  /** Floors already replayed, so a caller re-sending the same `since` does not replay again. */
  private floorsUsed = new Map<string, number>();
  private channelsLive = false;
  private memCursor: number | undefined;
  private startWatermark = nowSec();
  private pendingChannels: ChannelSubscription[] | undefined;
  /** Set once the relay showed it has no HTTP bridge. */
  private readsOverSocket = false;
  private readonly coalescer: Coalescer;
  /** Subscriptions of other parts (`watch`), by subscription id. */
  private readonly watchers = new Map<string, (ev: Event) => void>();

  constructor(private readonly opts: RelayClientOptions) {
    super();
    this.pubkey = pubkeyOf(opts.secretKey);
    this.log = opts.logger ?? silentLogger();
    this.throttle = new LogThrottle(this.log, { summaryEvt: "relay.log_suppressed" });
    this.dedupe = new TwoGenerationDedupe(opts.dedupeCapacity);
    this.skew = opts.sinceSkewSec ?? 5;
    const q = opts.connection?.frameQuota;
    this.configuredQuota = q === undefined ? BUZZ_FRAME_QUOTA : q;
    this.budget = new FrameBudget(shareOf(this.configuredQuota, opts.frameShare ?? 1));
    this.shortLives = new ShortLives(this.log, () => this.budget.current !== null);
    this.gate = new RatePause(opts.connection?.defaultRateLimitMs);
    this.relayInfo = new RelayInfoSource({ url: opts.url, logger: this.log });
    this.relayInfo.onChange = (info) => this.adapt(info);
    this.planner = new LifetimePlanner({
      current: () => this.conn,
      spawn: () => {
        const next = this.makeConnection();
        next.start();
        return next;
      },
      adopt: (next) => {
        this.conn = next;
        this.emit("state", next.state);
      },
      framesToSubscribe: () => 1 + this.subs.size,
      budgetFree: () => this.budget.free(),
      tooShortToPlan: (ms) => this.shortLives.tooShortToPlan(ms),
      logger: this.log,
    });
    this.conn = this.makeConnection();
    this.http = new RelayHttp({
      ...opts.http,
      url: opts.url,
      secretKey: opts.secretKey,
      logger: this.log,
      budget: this.budget,
      gate: this.gate,
    });
    this.coalescer = new Coalescer(() => this.applyChannels(), opts.coalesce ?? { quietMs: 300, maxMs: 1000 });
    this.setSubscription(SUB_MEMBERSHIP, () => membershipFilter(this.pubkey, this.since()));
  }

  /** A socket sharing the client's budget, gate and counters, carrying every subscription. */
  private makeConnection(): RelayConnection {
    const conn = new RelayConnection({
      ...this.opts.connection,
      url: this.opts.url,
      secretKey: this.opts.secretKey,
      logger: this.log,
      budget: this.budget,
      gate: this.gate,
      metrics: this.connMetrics,
      shortLives: this.shortLives,
    });
    conn.on("state", (s: ConnectionState) => {
      // Each new socket: read the relay's document again (its key may have changed).
      if (s === "connecting" && this.opts.readRelayInfo !== false) void this.relayInfo.refresh();
      if (conn !== this.conn) return;
      if (s === "closed") this.channelsLive = false;
      if (s === "authenticated") this.planner.authenticated(conn);
      this.emit("state", s);
    });
    conn.on("auth-failed", (r: string) => conn === this.conn && this.emit("auth-failed", r));
    conn.on("eose", (id: string) => id === SUB_CHANNELS && !conn.isRetiring && this.onChannelsEose());
    conn.on("event", (subId: string, ev: Event) => this.onEvent(subId, ev));
    for (const [id, filters] of this.subs) conn.setSubscription(id, filters);
    return conn;
  }

  private setSubscription(id: string, filters: () => Filter[]): void {
    this.subs.set(id, filters);
    this.conn.setSubscription(id, filters);
  }

  /** The relay's document was read: its quota and lifetime apply from now on. */
  private adapt(info: RelayInfo): void {
    const stated = info.limits.frameQuota;
    const mine = this.configuredQuota;
    // The stricter of ours and the relay's, by rate; then this daemon's share of it.
    const strict = !mine || !stated ? mine : stated.frames / stated.windowMs < mine.frames / mine.windowMs ? stated : mine;
    this.budget.setQuota(shareOf(strict, this.opts.frameShare ?? 1));
    this.planner.setLifetime(info.limits.maxConnectionLifetimeMs);
  }

  /** Loads the wasm verifier, then connects (and keeps reconnecting until `stop()`). */
  async start(): Promise<void> {
    await initCrypto();
    this.startWatermark = nowSec();
    this.conn.start();
  }

  stop(): void {
    this.coalescer.cancel();
    this.planner.stop();
    this.conn.stop();
    this.gate.stop();
    this.budget.stop();
  }

  /** The relay's NIP-11 document as last read (Buzz's defaults before that). */
  get info(): RelayInfo {
    return this.relayInfo.info;
  }

  /** The largest message content a publish may carry here: longer replies are split at this. */
  contentLimit(): number {
    return contentRoom(this.relayInfo.info.limits);
  }

  /** The frame budget in force (after the relay's statement and this daemon's share); null = none. */
  get frameQuota(): FrameQuota | null {
    return this.budget.current;
  }

  /** The relay's connection lifetime as last read, if it has one. */
  get connectionLifetimeMs(): number | undefined {
    return this.planner.lifetime;
  }

  get state(): ConnectionState {
    return this.conn.state;
  }

  get lastAuthError(): string | undefined {
    return this.conn.lastAuthError;
  }

  /** Counters for /metrics and tests. */
  get metrics() {
    return {
      ...this.connMetrics,
      ...this.counters,
      rotations: { ...this.planner.metrics },
      budget: { ...this.budget.metrics },
      http: { ...this.http.metrics },
      nip11: { ...this.relayInfo.metrics },
      dedupeSize: this.dedupe.size,
    };
  }

  /** Channels subscribed, or about to be (a coalesced change not yet on the wire). */
  get channelIds(): string[] {
    return this.pendingChannels ? this.pendingChannels.map((c) => c.id) : [...this.channels.keys()];
  }

  /**
   * Replaces the channel set. Sends ONE `REQ` (same subscription id, so the relay replaces the
   * old one) and only when something changed. While connected, changes arriving close together
   * are coalesced (`coalesce`) into one frame; before that they only shape the first REQ.
   */
  setChannels(list: ChannelSubscription[]): void {
    this.pendingChannels = list;
    if (this.conn.authenticated) return this.coalescer.touch();
    this.coalescer.cancel();
    this.applyChannels();
  }

  private applyChannels(): void {
    const list = this.pendingChannels;
    this.pendingChannels = undefined;
    if (!list) return;
    const next = new Map(
      list.map((c) => [c.id, c.since !== undefined && this.floorsUsed.get(c.id) === c.since ? { ...c, since: undefined } : { ...c }]),
    );
    const key = keyOf(next);
    if (key === this.channelsKey) return;
    this.channelsKey = key;
    this.channels = next;
    this.channelsLive = false;
    this.setSubscription(SUB_CHANNELS, () => this.channelFilters());
  }

  /**
   * One more subscription, of a part above the client (the instance beacon): one REQ frame
   * per connection, re-sent after each reconnect with `filters()` read anew. Its events
   * reach `onEvent` shape-checked, signature-verified and de-duplicated.
   */
  watch(subId: string, filters: () => Filter[], onEvent: (ev: Event) => void): void {
    this.watchers.set(subId, onEvent);
    this.conn.setSubscription(subId, filters);
  }

  /** Resolves true once the relay has acknowledged (EOSE) the current channel set. */
  waitSubscribed(timeoutMs: number): Promise<boolean> {
    this.coalescer.flush(); // whoever waits wants the change on the wire now
    if (this.channelsLive) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.channelsEoseWaiters.delete(onEose);
        resolve(false);
      }, timeoutMs);
      const onEose = () => {
        if (!this.channelsLive) return;
        clearTimeout(t);
        this.channelsEoseWaiters.delete(onEose);
        resolve(true);
      };
      this.channelsEoseWaiters.add(onEose);
    });
  }

  /** Resolves true once authenticated. */
  waitAuthenticated(timeoutMs: number): Promise<boolean> {
    return this.conn.waitAuthenticated(timeoutMs);
  }

  sign(tpl: EventTemplate): VerifiedEvent {
    return signEvent(tpl, this.opts.secretKey);
  }

  /** Publishes a signed event over the WebSocket, retrying only what can succeed later. */
  publish(ev: Event, opts?: PublishOptions): Promise<PublishOutcome> {
    return publishWithRetry(() => this.conn, ev, { ...this.opts.publish, ...opts }, this.log);
  }

  /** Which of `ids` the relay has, asked again after `settleMs` (a publish timeout) when none is found yet (confirm.ts). */
  storedAmong(ids: string[], settleMs: number): Promise<string[]> {
    return storedAmong(this, ids, settleMs);
  }

  /** Signs `tpl` and publishes it; the signed event comes back with the outcome. */
  async send(tpl: EventTemplate, opts?: PublishOptions): Promise<{ event: VerifiedEvent; outcome: PublishOutcome }> {
    const event = this.sign(tpl);
    return { event, outcome: await this.publish(event, opts) };
  }

  /**
   * Reads stored events: over Buzz's HTTP bridge (`POST /query`) where the relay has one, else
   * over the WebSocket. A relay whose `/query` answers 404 (any plain NIP-01/NIP-29 relay) is
   * switched to WebSocket reads for good, with one info line saying so. `wait`: an outage is
   * waited out until it ends (outage.ts).
   */
  async query(filters: Filter[], wait?: OutageWait): Promise<Event[]> {
    if (!this.readsOverSocket) {
      try {
        return await this.http.query(filters, wait);
      } catch (err) {
        if (!(err instanceof RelayHttpError) || err.status !== 404) throw err;
        this.readsOverSocket = true;
        this.log.info(
          { evt: "relay.reads_over_websocket", url: this.opts.url },
          "the relay has no HTTP bridge (/query answers 404): reading history, channels and profiles over the WebSocket",
        );
      }
    }
    return this.socketQuery(filters, wait);
  }

  async count(filters: Filter[]): Promise<number> {
    if (this.readsOverSocket) return (await this.socketQuery(filters.map((f) => ({ ...f, limit: undefined })))).length;
    return this.http.count(filters);
  }

  /**
   * A WebSocket read; a `rate-limited` refusal is waited out and tried again (three tries in
   * all). `wait`: a lost or missing connection is tried again until it ends (outage.ts).
   */
  private socketQuery(filters: Filter[], wait?: OutageWait): Promise<Event[]> {
    const rateLimited = (err: unknown) => err instanceof RelayQueryError && /rate-limited/.test(err.message);
    return retry(async () => (await this.conn.query(filters)).filter((e) => eventShapeProblem(e) === undefined), {
      backoff: { baseMs: 1000, capMs: OUTAGE_PAUSE_CAP_MS },
      retryable: (err, attempt) => (rateLimited(err) ? attempt < 3 : isRelayOutage(err) && waiting(wait)),
      delayMs: (err) => (rateLimited(err) ? Math.max(this.conn.rateLimitedFor, 1000) : undefined),
      onRetry: (_attempt, err) => {
        if (!rateLimited(err)) wait?.onOutage?.((err as Error).message);
      },
    });
  }

  /** The resubscribe floor: durable cursor, else last handled, else start time; minus the skew. */
  private since(): number {
    const base = this.opts.cursor?.get() ?? this.memCursor ?? this.startWatermark;
    return Math.max(0, base - this.skew);
  }

  /**
   * Channels with their own replay floor share the lowest one, so a burst of joins (each with
   * its notification's time) adds one filter, not one per channel; the extra replay is
   * de-duplicated by id.
   */
  private channelFilters(): Filter[] {
    const since = this.since();
    this.floorsSent = new Set();
    let floor = since;
    for (const ch of this.channels.values()) if (ch.since !== undefined && ch.since < since) floor = Math.min(floor, ch.since);
    return channelFilters(this.channels.values(), this.pubkey, (ch) => {
      if (ch.since === undefined || ch.since >= since) return since;
      this.floorsSent.add(ch.id);
      return floor;
    });
  }

  /** A channel's own floor is only needed for its first replay; then the shared cursor covers it. */
  private onChannelsEose(): void {
    for (const id of this.floorsSent) {
      const ch = this.channels.get(id);
      if (ch?.since !== undefined) this.floorsUsed.set(id, ch.since);
      if (ch) ch.since = undefined;
    }
    this.floorsSent.clear();
    this.channelsKey = keyOf(this.channels);
    this.channelsLive = true;
    for (const w of [...this.channelsEoseWaiters]) w();
  }

  private onEvent(subId: string, ev: Event): void {
    if (subId === SUB_MEMBERSHIP) return this.onMembership(ev);
    const watcher = this.watchers.get(subId);
    if (watcher) {
      if (!verifySignature(ev)) return this.badSignature(ev);
      if (!this.dedupe.add(ev.id)) return;
      return this.deliver(() => watcher(ev), ev);
    }
    if (subId !== SUB_CHANNELS) return;
    if (!isRequested(ev, this.channels, this.pubkey)) {
      this.counters.unrequested++;
      this.throttle.warn(
        "relay.unrequested_event",
        { event: ev.id, kind: ev.kind, channel: channelOf(ev) },
        "ignored an event we did not subscribe to",
      );
      return;
    }
    if (this.opts.verifySignatures && !verifySignature(ev)) return this.badSignature(ev);
    if (!this.dedupe.add(ev.id)) {
      this.counters.duplicates++;
      return;
    }
    this.counters.emitted++;
    this.deliver(() => this.emit("event", ev, { channel: channelOf(ev)!, live: this.channelsLive }), ev);
    this.advanceCursor(ev);
  }

  private onMembership(ev: Event): void {
    if (!isMembershipFor(ev, this.pubkey)) {
      this.counters.unrequested++;
      this.throttle.warn("relay.unrequested_event", { event: ev.id, kind: ev.kind }, "ignored a membership event not addressed to us");
      return;
    }
    if (!verifySignature(ev)) return this.badSignature(ev);
    if (!this.dedupe.add(ev.id)) {
      this.counters.duplicates++;
      return;
    }
    this.counters.membership++;
    const change: MembershipChange = {
      type: ev.kind === KIND.memberAdded ? "added" : "removed",
      channel: channelOf(ev)!,
      at: ev.created_at,
      event: ev,
    };
    this.log.info({ evt: "relay.membership", type: change.type, channel: change.channel }, `membership ${change.type}`);
    this.deliver(() => this.emit("membership", change), ev);
    this.advanceCursor(ev);
  }

  /** A throwing handler is a bug downstream; it must not take the socket (and every channel) with it. */
  private deliver(fn: () => void, ev: Event): void {
    try {
      fn();
    } catch (err) {
      this.log.error({ evt: "relay.handler_error", event: ev.id, err: (err as Error).message }, "an event handler threw");
    }
  }

  private badSignature(ev: Event): void {
    this.counters.badSignatures++;
    this.throttle.warn(
      "relay.bad_signature",
      { event: ev.id, kind: ev.kind, author: ev.pubkey },
      "ignored an event with an invalid signature",
    );
  }

  /** Clamped to now: a publisher's fast clock must not push the replay floor past real events. */
  private advanceCursor(ev: Event): void {
    const at = Math.min(ev.created_at, nowSec());
    if (this.memCursor === undefined || at > this.memCursor) this.memCursor = at;
  }
}

/** A daemon's part of a quota: at least one frame per window. */
function shareOf(q: FrameQuota | null, share: number): FrameQuota | null {
  if (!q || share >= 1) return q;
  return { frames: Math.max(1, Math.floor(q.frames * share)), windowMs: q.windowMs };
}

/** Identity of a channel set, to send a new REQ only when it really changed. */
function keyOf(channels: Map<string, ChannelSubscription>): string {
  return JSON.stringify([...channels.values()].sort((a, b) => (a.id < b.id ? -1 : 1)));
}
