/**
 * The HTTP side of the relay's one port: Buzz's NIP-98 bridge (`POST /query`, `/events`,
 * `/count`), the NIP-11 document (nip11.ts) and health on `GET /`, and the admin API for
 * the subprocess form (`POST /admin/<op>`, `Authorization: Bearer <admin token>`; the token
 * is printed by `buzz-bridge dev-relay`; the ops are in docs/dev-relay.md). A bridge call
 * draws from the caller's shared frame quota as well as from the HTTP quota.
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Filter } from "nostr-tools/filter";
import type { RelayCore } from "./core.js";
import { DevRelayAdminError } from "./errors.js";
import type { Nip98Guard } from "./nip98.js";
import { rateLimited } from "./connection.js";
import { RateLimiter } from "../base/rate-limit.js";
import { readBody } from "../base/http-body.js";
import { filterReason } from "./rules.js";
import { handleMedia, isMediaRoute } from "./media.js";
import type { MediaStore } from "./media-store.js";
import { nip11Document } from "./nip11.js";

export interface HttpDeps {
  core: RelayCore;
  nip98: Nip98Guard;
  adminToken: string;
  /** Runs one admin op; throws DevRelayAdminError for a request that cannot be carried out. */
  admin(op: string, body: Record<string, unknown>): Promise<unknown>;
  /** Per-pubkey HTTP quota counters (Buzz counts calls per identity, not per connection). */
  httpQuota: Map<string, RateLimiter>;
  /** Blobs of the media routes (media.ts). */
  media: MediaStore;
  /** A NIP-11 answer set by a test in place of the real one (a relay with none, a broken or lying one). */
  nip11Override(): Nip11Override | undefined;
}

/** What `GET /` answers instead of the real document: a status, raw text, or another document. */
export interface Nip11Override {
  status?: number;
  raw?: string;
  document?: unknown;
}

export async function handleHttp(req: IncomingMessage, res: ServerResponse, deps: HttpDeps): Promise<void> {
  const path = (req.url ?? "/").split("?")[0]!;
  if (isMediaRoute(req.method, path)) return handleMedia(req, res, path, { media: deps.media, nip98: deps.nip98, dir: deps.core.dir });
  if (req.method === "GET" && (path === "/" || path === "/info")) {
    // NIP-11 asks for `Accept: application/nostr+json`; a plain GET gets the same document.
    const o = deps.nip11Override();
    if (o?.raw !== undefined || (o?.status !== undefined && o.document === undefined)) {
      res.writeHead(o.status ?? 200, { "content-type": "application/nostr+json" });
      return void res.end(o.raw ?? "");
    }
    const doc = o?.document !== undefined ? o.document : nip11Document(deps.core.relayPubkey, deps.core.limits);
    return json(res, o?.status ?? 200, doc, "application/nostr+json");
  }
  if (req.method === "GET" && path === "/health") return json(res, 200, { ok: true });
  if (req.method !== "POST") return json(res, 404, { error: `no route ${req.method} ${path}` });
  let body: Buffer;
  try {
    body = await readBody(req, 2 * deps.core.limits.frameBytes);
  } catch (err) {
    return json(res, 413, { error: (err as Error).message });
  }
  if (path.startsWith("/admin/")) return admin(req, res, path.slice(7), body, deps);
  if (path !== "/query" && path !== "/events" && path !== "/count") return json(res, 404, { error: `no route POST ${path}` });
  const auth = deps.nip98.check(req, body);
  if (!auth.ok) return json(res, auth.status, { error: auth.error });
  if (!deps.core.dir.isRelayMember(auth.pubkey)) {
    return json(res, 403, { error: "relay_membership_required", message: "restricted: not a relay member" });
  }
  const quota = deps.core.limits.httpQuota;
  if (quota) {
    let limiter = deps.httpQuota.get(auth.pubkey);
    if (!limiter) deps.httpQuota.set(auth.pubkey, (limiter = new RateLimiter(quota)));
    const retry = limiter.take();
    if (retry !== undefined) return json(res, 429, { error: rateLimited(retry) });
  }
  const shared = deps.core.buckets.take(auth.pubkey, "http");
  if (shared !== undefined) return json(res, 429, { error: rateLimited(shared) });
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return json(res, 400, { error: "invalid: body is not valid JSON" });
  }
  if (path === "/events") {
    const r = deps.core.ingest(parsed, auth.pubkey, "http");
    return json(res, r.accepted ? 200 : statusFor(r.message), { event_id: r.eventId, accepted: r.accepted, message: r.message });
  }
  const filters = Array.isArray(parsed) ? parsed : [parsed];
  for (const f of filters) {
    const reason = filterReason(f, auth.pubkey);
    if (reason) return json(res, reason.startsWith("restricted") ? 403 : 400, { error: reason });
  }
  if (path === "/count") return json(res, 200, { count: deps.core.count(filters as Filter[], auth.pubkey) });
  return json(res, 200, deps.core.query(filters as Filter[], auth.pubkey));
}

/** A refused write keeps Buzz's JSON body; the status says which kind of refusal it was. */
function statusFor(message: string): number {
  if (message.startsWith("restricted:") || message.startsWith("blocked:")) return 403;
  if (message.startsWith("rate-limited:")) return 429;
  return 400;
}

async function admin(req: IncomingMessage, res: ServerResponse, op: string, body: Buffer, deps: HttpDeps): Promise<void> {
  const given = Buffer.from((req.headers.authorization ?? "").replace(/^Bearer /, ""));
  const want = Buffer.from(deps.adminToken);
  if (given.length !== want.length || !timingSafeEqual(given, want))
    return json(res, 401, { error: "admin: missing or wrong Bearer token" });
  let args: Record<string, unknown> = {};
  try {
    if (body.length > 0) args = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
  } catch {
    return json(res, 400, { error: "admin: body is not valid JSON" });
  }
  try {
    return json(res, 200, (await deps.admin(op, args)) ?? { ok: true });
  } catch (err) {
    if (err instanceof DevRelayAdminError) return json(res, 400, { error: `admin: ${err.message}` });
    throw err;
  }
}

function json(res: ServerResponse, status: number, value: unknown, type = "application/json"): void {
  const text = JSON.stringify(value);
  // NIP-11: the document is readable from any origin.
  const cors = type === "application/nostr+json" ? { "access-control-allow-origin": "*" } : {};
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(text), ...cors });
  res.end(text);
}
