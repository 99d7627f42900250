/**
 * Test clients for the dev relay that show the exact wire frames (no client-side
 * filtering, unlike nostr-tools' Relay): a raw WebSocket client with a frame queue and
 * NIP-42 helper, and a NIP-98 signed HTTP POST. Used by the dev relay's own tests and
 * available to other suites.
 */
import { createHash, randomUUID } from "node:crypto";
import { finalizeEvent, getPublicKey, type Event, type EventTemplate } from "nostr-tools";
import WebSocket from "ws";

export type Frame = [string, ...unknown[]];

export class RawClient {
  readonly frames: Frame[] = [];
  private waiters: { pred: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];
  closed = false;
  challenge: string | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const f = JSON.parse(data.toString()) as Frame;
      if (f[0] === "AUTH" && typeof f[1] === "string") this.challenge = f[1];
      const i = this.waiters.findIndex((w) => w.pred(f));
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(f);
      else this.frames.push(f);
    });
    ws.on("close", () => (this.closed = true));
  }

  static async open(url: string, headers?: Record<string, string>): Promise<RawClient> {
    const ws = new WebSocket(url, { headers });
    const c = new RawClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    return c;
  }

  /** Opens, waits for the challenge and authenticates as `sk` with the relay tag `url` (no trailing slash). */
  static async authed(url: string, sk: Uint8Array): Promise<RawClient> {
    const c = await RawClient.open(url);
    const ok = await c.auth(sk, url);
    if (ok[2] !== true) throw new Error(`AUTH refused: ${String(ok[3])}`);
    return c;
  }

  send(msg: unknown[] | string): void {
    this.ws.send(typeof msg === "string" ? msg : JSON.stringify(msg));
  }

  /** The next frame (queued or future) satisfying `pred`; rejects after `timeoutMs`. */
  next(pred: (f: Frame) => boolean = () => true, timeoutMs = 3000): Promise<Frame> {
    const i = this.frames.findIndex(pred);
    if (i >= 0) return Promise.resolve(this.frames.splice(i, 1)[0]!);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve: (f: Frame) => (clearTimeout(t), resolve(f)) };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`no matching frame within ${timeoutMs} ms; queued: ${JSON.stringify(this.frames).slice(0, 500)}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  async auth(sk: Uint8Array, relayTag: string, challenge?: string): Promise<Frame> {
    if (!this.challenge) await this.next((f) => f[0] === "AUTH");
    const ev = finalizeEvent({ kind: 22242, created_at: now(), content: "", tags: [["relay", relayTag], ["challenge", challenge ?? this.challenge!]] }, sk);
    this.send(["AUTH", ev]);
    return this.next((f) => f[0] === "OK" && f[1] === ev.id);
  }

  /** Publishes and returns the OK frame. */
  async publish(ev: Event, timeoutMs?: number): Promise<Frame> {
    this.send(["EVENT", ev]);
    return this.next((f) => f[0] === "OK" && f[1] === ev.id, timeoutMs);
  }

  /** Sends a REQ and collects stored events up to EOSE (or the CLOSED frame when refused). */
  async req(subId: string, ...filters: object[]): Promise<{ events: Event[]; closed?: string }> {
    this.send(["REQ", subId, ...filters]);
    const events: Event[] = [];
    for (;;) {
      const f = await this.next((x) => x[1] === subId && (x[0] === "EVENT" || x[0] === "EOSE" || x[0] === "CLOSED"));
      if (f[0] === "EVENT") events.push(f[2] as Event);
      else if (f[0] === "CLOSED") return { events, closed: f[2] as string };
      else return { events };
    }
  }

  /** Live events for `subId` that arrived (already queued) — drained. */
  drain(subId: string): Event[] {
    const out: Event[] = [];
    for (let i = 0; i < this.frames.length; ) {
      const f = this.frames[i]!;
      if (f[0] === "EVENT" && f[1] === subId) {
        out.push(f[2] as Event);
        this.frames.splice(i, 1);
      } else i++;
    }
    return out;
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once("close", () => resolve());
      this.ws.close();
    });
  }
}

export function now(): number {
  return Math.floor(Date.now() / 1000);
}

export function sign(t: Partial<EventTemplate> & { kind: number }, sk: Uint8Array): Event {
  return finalizeEvent({ created_at: now(), content: "", tags: [], ...t }, sk);
}

/** A NIP-98 `Authorization` header value for exactly these body bytes (with a nonce, as Buzz clients do). */
export function nip98Header(url: string, method: string, body: string, sk: Uint8Array, extraTags: string[][] = []): string {
  const payload = createHash("sha256").update(body).digest("hex");
  const ev = finalizeEvent({ kind: 27235, created_at: now(), content: "", tags: [["u", url], ["method", method], ["nonce", randomUUID()], ["payload", payload], ...extraTags] }, sk);
  return `Nostr ${Buffer.from(JSON.stringify(ev)).toString("base64")}`;
}

export async function nip98Post(httpUrl: string, path: string, value: unknown, sk: Uint8Array, header?: string): Promise<{ status: number; body: any }> {
  const body = JSON.stringify(value);
  const res = await fetch(`${httpUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: header ?? nip98Header(`${httpUrl}${path}`, "POST", body, sk) },
    body,
  });
  return { status: res.status, body: await res.json() };
}

export { getPublicKey };
