/**
 * NIP-98 HTTP auth as Buzz checks it (docs/protocol.md §2): `Authorization: Nostr <base64
 * kind 27235>`, `u` = `http://<Host><path>`, `method`, `payload` = sha256 hex of the
 * exact body bytes, created_at within ±60 s, each auth event id accepted once.
 */
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Event } from "nostr-tools";
import { KIND } from "../nostr/kinds.js";
import { verifyReason } from "./crypto.js";
import { shapeReason } from "./rules.js";
import { nowSec } from "../base/time.js";
import { tagValue } from "../base/tags.js";

const WINDOW_SEC = 60;

export type Nip98Result = { ok: true; pubkey: string } | { ok: false; status: 401; error: string };

export class Nip98Guard {
  /** Auth event id → unix second after which it could no longer pass the window anyway. */
  private readonly used = new Map<string, number>();

  check(req: IncomingMessage, body: Buffer): Nip98Result {
    const fail = (error: string): Nip98Result => ({ ok: false, status: 401, error });
    const header = req.headers.authorization;
    if (!header?.startsWith("Nostr ")) return fail("missing Nostr auth");
    let ev: Event;
    try {
      ev = JSON.parse(Buffer.from(header.slice(6).trim(), "base64").toString("utf8")) as Event;
    } catch {
      return fail("NIP-98: authorization is not base64 of a JSON event");
    }
    const shape = shapeReason(ev);
    if (shape) return fail(`NIP-98: ${shape.replace(/^invalid: /, "")}`);
    const bad = verifyReason(ev);
    if (bad) return fail(`NIP-98: ${bad.replace(/^invalid: /, "")}`);
    if (ev.kind !== KIND.httpAuth) return fail(`NIP-98: kind must be ${KIND.httpAuth}`);
    const now = nowSec();
    if (Math.abs(ev.created_at - now) > WINDOW_SEC) return fail(`NIP-98: created_at must be within ${WINDOW_SEC} s of relay time`);
    const expectedUrl = `http://${req.headers.host ?? ""}${req.url ?? "/"}`;
    if (tagValue(ev, "u") !== expectedUrl) return fail(`NIP-98: u tag must be exactly ${expectedUrl}`);
    if (tagValue(ev, "method")?.toUpperCase() !== req.method) return fail(`NIP-98: method tag must be ${req.method}`);
    const payload = tagValue(ev, "payload");
    if (body.length > 0 || payload !== undefined) {
      const digest = createHash("sha256").update(body).digest("hex");
      if (payload !== digest) return fail("NIP-98: payload tag must be the sha256 hex of the request body");
    }
    this.prune(now);
    if (this.used.has(ev.id)) return fail("NIP-98: replay detected");
    this.used.set(ev.id, ev.created_at + WINDOW_SEC);
    return { ok: true, pubkey: ev.pubkey };
  }

  private prune(now: number): void {
    if (this.used.size < 1024) return;
    for (const [id, until] of this.used) if (until < now) this.used.delete(id);
  }
}
