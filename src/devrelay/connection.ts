/**
 * One WebSocket client: NIP-01 messages (EVENT, REQ, CLOSE, COUNT) behind NIP-42 as Buzz
 * enforces it (docs/protocol.md §1): challenge on connect, a fixed time to answer, the
 * exact `relay` tag `ws://<Host header>`, relay members only, failure sticky for the
 * connection; before that REQ gets `CLOSED auth-required:` and EVENT `OK false`. Frames
 * draw from the key's shared quota once authenticated (docs/protocol.md §7), and the
 * socket is closed when its lifetime, if the relay sets one, is up.
 */
import { randomBytes } from "node:crypto";
import type { Event } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import WebSocket, { type RawData } from "ws";
import { KIND } from "../nostr/kinds.js";
import type { RelayCore, Subscriber } from "./core.js";
import { verifyReason } from "./crypto.js";
import { RateLimiter } from "../base/rate-limit.js";
import { filterReason, LIMITS, shapeReason } from "./rules.js";
import { tagValue } from "../base/tags.js";

export interface ConnectionOptions {
  authTimeoutMs: number;
  /** When true, EVENTs are processed but never answered with OK (publish-timeout tests). */
  swallowOk: () => boolean;
}

/** NIP-42 events may be this far from relay time (Buzz: ±60 s). */
const AUTH_SKEW_SEC = 60;

export class Connection implements Subscriber {
  pubkey: string | undefined;
  readonly subs = new Map<string, Filter[]>();
  private challenge = "";
  private challengeUsed = false;
  private authFailed = false;
  private readonly authTimer: NodeJS.Timeout;
  private readonly lifetimeTimer: NodeJS.Timeout | undefined;
  /** Frames before authentication, when no key is known yet, count against the connection. */
  private readonly preAuthLimiter: RateLimiter | undefined;

  constructor(
    private readonly ws: WebSocket,
    /** The request's Host header; the AUTH `relay` tag must be `ws://` + this. */
    private readonly host: string,
    private readonly core: RelayCore,
    private readonly opts: ConnectionOptions,
  ) {
    this.preAuthLimiter = core.limits.frameQuota ? new RateLimiter(core.limits.frameQuota) : undefined;
    ws.on("message", (data) => this.onFrame(data));
    ws.on("error", () => ws.terminate());
    this.authTimer = setTimeout(() => {
      if (this.pubkey !== undefined) return;
      this.send(["NOTICE", "auth-required: no NIP-42 authentication within the time allowed"]);
      ws.close(1008, "auth timeout");
    }, opts.authTimeoutMs);
    this.authTimer.unref();
    const lifetime = core.limits.maxConnectionLifetimeMs;
    if (lifetime !== null) {
      // NIP-FI: no in-band renewal; the client reconnects and authenticates anew.
      this.lifetimeTimer = setTimeout(() => ws.close(1000, "max connection lifetime reached"), lifetime);
      this.lifetimeTimer.unref();
    }
    this.rechallenge();
  }

  /** Sends a fresh challenge; the next AUTH must answer it (Buzz may re-challenge mid-session). */
  rechallenge(): void {
    this.challenge = randomBytes(16).toString("hex");
    this.challengeUsed = false;
    this.send(["AUTH", this.challenge]);
  }

  sendRaw(frame: string): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(frame);
  }

  /** Cuts the connection without a closing handshake, as a network failure would. */
  terminate(): void {
    this.ws.terminate();
  }

  onClose(): void {
    clearTimeout(this.authTimer);
    clearTimeout(this.lifetimeTimer);
    this.subs.clear();
  }

  private send(msg: unknown[]): void {
    this.sendRaw(JSON.stringify(msg));
  }

  private onFrame(data: RawData): void {
    this.core.stats.framesIn++;
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    const max = this.core.limits.frameBytes;
    if (buf.length > max) {
      this.send(["NOTICE", `error: frame too large (${buf.length} bytes, max ${max})`]);
      this.ws.close(1009, "frame too large");
      return;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(buf.toString("utf8"));
    } catch {
      this.send(["NOTICE", "invalid: message is not valid JSON"]);
      return;
    }
    if (!Array.isArray(msg) || typeof msg[0] !== "string") {
      this.send(["NOTICE", "invalid: a message must be a JSON array whose first element is its type"]);
      return;
    }
    try {
      this.dispatch(msg as [string, ...unknown[]]);
    } catch (err) {
      // A bug in one message's handling must not take the relay down.
      this.send(["NOTICE", `error: internal error (${(err as Error).message})`]);
    }
  }

  private dispatch(msg: [string, ...unknown[]]): void {
    const [type] = msg;
    if (type === "AUTH") return this.onAuth(msg[1]);
    if (type !== "EVENT" && type !== "REQ" && type !== "CLOSE" && type !== "COUNT") {
      this.send(["NOTICE", `invalid: unknown message type ${JSON.stringify(type).slice(0, 40)}`]);
      return;
    }
    if (type === "REQ") this.core.stats.reqFrames++;
    if (type === "CLOSE") {
      // Buzz's quota counts EVENT, REQ and COUNT; a CLOSE only frees a slot.
      if (typeof msg[1] === "string") this.subs.delete(msg[1]);
      return;
    }
    const retry = this.pubkey === undefined ? this.preAuthLimiter?.take() : this.core.buckets.take(this.pubkey, "ws");
    if (type === "EVENT") return this.onEvent(msg[1], retry);
    const subId = msg[1];
    if (typeof subId !== "string" || subId.length === 0 || subId.length > LIMITS.maxSubIdLength) {
      this.send(["NOTICE", `invalid: ${type} needs a subscription id of 1..${LIMITS.maxSubIdLength} characters`]);
      return;
    }
    if (retry !== undefined) return this.send(["CLOSED", subId, rateLimited(retry)]);
    if (this.pubkey === undefined) return this.send(["CLOSED", subId, "auth-required: authenticate with NIP-42 first"]);
    const filters = msg.slice(2);
    if (filters.length === 0) return this.send(["CLOSED", subId, `invalid: ${type} needs at least one filter`]);
    for (const f of filters) {
      const reason = filterReason(f, this.pubkey);
      if (reason) return this.send(["CLOSED", subId, reason]);
    }
    if (type === "COUNT") {
      this.send(["COUNT", subId, { count: this.core.count(filters as Filter[], this.pubkey) }]);
      return;
    }
    const maxSubs = this.core.limits.maxSubscriptions;
    if (!this.subs.has(subId) && this.subs.size >= maxSubs) {
      return this.send(["CLOSED", subId, `blocked: at most ${maxSubs} subscriptions per connection`]);
    }
    const prefix = `["EVENT",${JSON.stringify(subId)},`;
    for (const ev of this.core.query(filters as Filter[], this.pubkey)) this.sendRaw(`${prefix}${JSON.stringify(ev)}]`);
    this.send(["EOSE", subId]);
    this.subs.set(subId, filters as Filter[]);
  }

  private onEvent(raw: unknown, retry: number | undefined): void {
    const id = typeof (raw as { id?: unknown })?.id === "string" ? (raw as { id: string }).id : undefined;
    if (id === undefined) return this.send(["NOTICE", "invalid: EVENT needs an event object with an id"]);
    const answer = (ok: boolean, message: string) => {
      if (!this.opts.swallowOk()) this.send(["OK", id, ok, message]);
    };
    // Buzz refuses an over-quota EVENT with OK false naming the wait; nothing is stored.
    if (retry !== undefined) return answer(false, rateLimited(retry));
    if (this.pubkey === undefined) return answer(false, "auth-required: authenticate with NIP-42 first");
    const r = this.core.ingest(raw, this.pubkey, "ws");
    answer(r.accepted, r.message);
  }

  private onAuth(raw: unknown): void {
    const id = typeof (raw as { id?: unknown })?.id === "string" ? (raw as { id: string }).id : undefined;
    if (id === undefined) return this.send(["NOTICE", "invalid: AUTH needs a signed kind 22242 event"]);
    const reply = (ok: boolean, message: string) => this.send(["OK", id, ok, message]);
    if (this.authFailed) return reply(false, "auth-required: authentication already failed");
    if (this.pubkey !== undefined && this.challengeUsed) return reply(false, "auth-required: already authenticated");
    const problem = this.authProblem(raw);
    if (problem) {
      this.authFailed = true;
      return reply(false, `auth-required: verification failed (${problem})`);
    }
    const ev = raw as Event;
    if (!this.core.dir.isRelayMember(ev.pubkey)) {
      this.authFailed = true;
      return reply(false, "restricted: not a relay member");
    }
    this.pubkey = ev.pubkey;
    this.challengeUsed = true;
    reply(true, "");
  }

  private authProblem(raw: unknown): string | null {
    const shape = shapeReason(raw);
    if (shape) return shape.replace(/^invalid: /, "");
    const ev = raw as Event;
    const bad = verifyReason(ev);
    if (bad) return bad.replace(/^invalid: /, "");
    if (ev.kind !== KIND.auth) return `kind must be ${KIND.auth}`;
    if (tagValue(ev, "challenge") !== this.challenge) return "challenge does not match the latest AUTH challenge";
    const expected = `ws://${this.host}`;
    if (tagValue(ev, "relay") !== expected) return `relay tag must be exactly ${expected}`;
    if (Math.abs(ev.created_at - Date.now() / 1000) > AUTH_SKEW_SEC) return `created_at must be within ${AUTH_SKEW_SEC} s of relay time`;
    return null;
  }
}

/** Buzz's over-quota text (docs/protocol.md, "Limits"). */
export function rateLimited(retrySec: number): string {
  return `rate-limited: quota exceeded; retry in ${retrySec}s`;
}
