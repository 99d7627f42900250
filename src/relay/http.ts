/**
 * The relay's NIP-98 HTTP bridge (docs/protocol.md §2): `POST /query` (history, metadata,
 * profiles), `/count` and `/events`. 429 and 5xx are retried with backoff, honouring the relay's
 * `retry in Ns`; every attempt carries a freshly signed auth event. Buzz counts every call in
 * the same per-key bucket as the identity's WebSocket frames, so each attempt takes a slot of
 * the shared frame budget and waits out a rate-limit pause the sockets were given (and a
 * 429 `rate-limited:` holds the sockets back in turn).
 */
import type { Event } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import type { Logger } from "../base/log.js";
import { silentLogger } from "../base/log.js";
import { httpOrigin } from "./auth.js";
import { retryAfterMs, sleep } from "../base/backoff.js";
import { retry } from "../base/retry.js";
import { OUTAGE_PAUSE_CAP_MS, waiting, type OutageWait } from "./outage.js";
import { RelayHttpError } from "./errors.js";
import { AnswerTooLargeError, httpRequest } from "../base/http-request.js";

/**
 * The most of an answer read: a `/query` asks for a bounded number of events (256 KiB of content
 * at most each, on Buzz); more than this is a relay answering endlessly, refused, not retried.
 */
const ANSWER_MAX_BYTES = 64 * 1024 * 1024;
import { nip98Header } from "../nostr/nip98.js";
import { eventShapeProblem } from "../nostr/validate.js";
import type { FrameBudget } from "./frame-budget.js";
import type { RatePause } from "./rate-pause.js";

export interface RelayHttpOptions {
  /** The relay's WebSocket URL; the HTTP origin is derived from it (ws→http, wss→https). */
  url: string;
  secretKey: Uint8Array;
  logger?: Logger;
  /** Attempts per call. Default 4 (the Buzz CLI uses 3). */
  attempts?: number;
  /** First retry pause. Default 500 ms, doubling, capped at 30 s like the Buzz CLI. */
  retryBaseMs?: number;
  /** Per-request timeout. Default 15 s. */
  timeoutMs?: number;
  /** The identity's shared frame budget; every call takes a slot. */
  budget?: FrameBudget;
  /** The identity's shared rate-limit pause. */
  gate?: RatePause;
}

export class RelayHttp {
  readonly origin: string;
  readonly metrics = { requests: 0, retries: 0, failures: 0 };
  private readonly log: Logger;

  constructor(private readonly opts: RelayHttpOptions) {
    this.origin = httpOrigin(opts.url);
    this.log = (opts.logger ?? silentLogger()).child({ relay_http: this.origin });
  }

  /** `POST /query`: events matching any filter; malformed entries are dropped. */
  async query(filters: Filter[], wait?: OutageWait): Promise<Event[]> {
    const out = await this.post("/query", filters, wait);
    if (!Array.isArray(out)) throw new RelayHttpError(this.origin + "/query", 200, "response is not a JSON array");
    return out.filter((e): e is Event => eventShapeProblem(e) === undefined);
  }

  /** `POST /count` → the number of matching events. */
  async count(filters: Filter[]): Promise<number> {
    const out = (await this.post("/count", filters)) as { count?: unknown };
    if (typeof out?.count !== "number") throw new RelayHttpError(this.origin + "/count", 200, "response has no numeric count");
    return out.count;
  }

  /**
   * POSTs `payload` as JSON; the NIP-98 payload hash covers exactly these bytes. `wait`: an
   * outage (no answer, a 5xx or 429) is tried again past the attempts until it ends (outage.ts).
   */
  async post(path: string, payload: unknown, wait?: OutageWait): Promise<unknown> {
    const url = this.origin + path;
    const body = Buffer.from(JSON.stringify(payload));
    const attempts = Math.max(1, this.opts.attempts ?? 4);
    // The failure of the last try, and whether it may pass (every other throw is final).
    let failed: { err: RelayHttpError; retryable: boolean; limited: boolean; text: string } | undefined;
    const once = async (): Promise<unknown> => {
      failed = undefined;
      const held = this.opts.gate?.remaining ?? 0;
      if (held > 0) await sleep(held);
      await this.opts.budget?.acquire("durable");
      this.metrics.requests++;
      let status = 0;
      let text = "";
      try {
        const res = await httpRequest(url, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: nip98Header(url, "POST", body, this.opts.secretKey) },
          body,
          timeoutMs: this.opts.timeoutMs ?? 15_000,
          maxBytes: ANSWER_MAX_BYTES,
        });
        status = res.status;
        text = res.text;
        if (res.ok) return text ? JSON.parse(text) : null;
      } catch (err) {
        if (err instanceof AnswerTooLargeError) throw new RelayHttpError(url, err.status, `answer too large: ${err.message}`);
        if (status) throw new RelayHttpError(url, status, `body is not JSON: ${text.slice(0, 120)}`);
        text = (err as Error).message;
      }
      const limited = status === 429 && /rate-limited/.test(text);
      // The same bucket as the sockets: they wait too (the gate's pause is the wait below).
      if (limited && this.opts.gate) this.opts.gate.hold(errorMessage(text));
      failed = {
        err: new RelayHttpError(url, status, errorMessage(text)),
        retryable: status === 0 || status === 429 || status >= 500,
        limited,
        text,
      };
      throw failed.err;
    };
    try {
      return await retry(once, {
        backoff: { baseMs: this.opts.retryBaseMs ?? 500, capMs: wait ? OUTAGE_PAUSE_CAP_MS : 30_000 },
        retryable: (err, attempt) => !!failed && failed.err === err && failed.retryable && (attempt < attempts || waiting(wait)),
        // The relay's own pause when it gave one; else the backoff's.
        delayMs: () => {
          if (failed!.limited && this.opts.gate) return this.opts.gate.remaining;
          const hint = retryAfterMs(failed!.text);
          return hint === undefined ? undefined : Math.min(30_000, hint);
        },
        onRetry: (attempt, _err, wait_ms) => {
          this.metrics.retries++;
          this.log.info({ evt: "relay.http_retry", path, status: failed!.err.status, wait_ms, attempt }, "relay HTTP call will be retried");
          if (attempt >= attempts) wait?.onOutage?.(failed!.err.message);
        },
      });
    } catch (err) {
      if (failed?.err === err) this.metrics.failures++;
      throw err;
    }
  }
}

function errorMessage(text: string): string {
  try {
    const j = JSON.parse(text) as { error?: string; message?: string };
    return [j.error, j.message].filter(Boolean).join(": ") || text;
  } catch {
    return text.slice(0, 300);
  }
}
