/**
 * Buzz's media routes on the dev relay (docs/dev-relay.md "Media"; docs/protocol.md §2):
 * `PUT /upload` (and its alias `PUT /media/upload`) stores the raw body as a blob and
 * answers a Blossom blob descriptor; `GET|HEAD /media/{sha256[.ext]}` serves it. Every
 * request is authorized like Buzz's: a Blossom kind 24242 event (`t` = get or upload, an
 * `x` tag with the blob's sha256, an `expiration` ahead) or a NIP-98 kind 27235 event, in
 * `Authorization: Nostr <base64>`, from a relay member.
 */
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Event } from "nostr-tools";
import { KIND } from "../nostr/kinds.js";
import { nowSec } from "../base/time.js";
import { readBody } from "../base/http-body.js";
import { tagValue, tagValues } from "../base/tags.js";
import type { Directory } from "./channels.js";
import { verifyReason } from "./crypto.js";
import type { MediaStore } from "./media-store.js";
import type { Nip98Guard } from "./nip98.js";
import { shapeReason } from "./rules.js";

/** The largest blob the dev relay stores. */
export const MAX_BLOB_BYTES = 32 * 1024 * 1024;

/** A Blossom event's created_at may run this far ahead of the relay's clock. */
const CLOCK_SKEW_SEC = 60;

const MEDIA_PATH = /^\/media\/([0-9a-f]{64})(?:\.([a-z0-9]{1,8}))?$/;

export interface MediaDeps {
  media: MediaStore;
  nip98: Nip98Guard;
  dir: Directory;
}

/** True when the request is one of the media routes (the caller then leaves it to handleMedia). */
export function isMediaRoute(method: string | undefined, path: string): boolean {
  if (method === "PUT") return path === "/upload" || path === "/media/upload";
  return (method === "GET" || method === "HEAD") && path.startsWith("/media/");
}

export async function handleMedia(req: IncomingMessage, res: ServerResponse, path: string, deps: MediaDeps): Promise<void> {
  if (req.method === "PUT") return upload(req, res, deps);
  const m = MEDIA_PATH.exec(path);
  if (!m) return json(res, 404, { error: "not found: expected /media/<sha256>[.ext]" });
  const [, sha256, ext] = m as unknown as [string, string, string | undefined];
  const auth = authorize(req, Buffer.alloc(0), "get", sha256, deps);
  if (!auth.ok) return json(res, auth.status, { error: auth.error });
  const blob = deps.media.get(sha256);
  if (!blob || (ext !== undefined && ext !== blob.ext)) return json(res, 404, { error: "not found" });
  deps.media.reads++;
  res.writeHead(200, {
    "content-type": blob.type,
    "content-length": blob.bytes.length,
    "cache-control": "private, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
  });
  res.end(req.method === "HEAD" ? undefined : blob.bytes);
}

async function upload(req: IncomingMessage, res: ServerResponse, deps: MediaDeps): Promise<void> {
  let body: Buffer;
  try {
    body = await readBody(req, MAX_BLOB_BYTES);
  } catch (err) {
    return json(res, 413, { error: (err as Error).message });
  }
  const sha256 = createHash("sha256").update(body).digest("hex");
  const claimed = header(req, "x-sha-256");
  if (claimed !== undefined && claimed !== sha256)
    return json(res, 400, { error: "hash mismatch: X-SHA-256 is not the sha256 of the body" });
  const auth = authorize(req, body, "upload", sha256, deps);
  if (!auth.ok) return json(res, auth.status, { error: auth.error });
  const type =
    (header(req, "content-type") ?? "application/octet-stream").split(";")[0]!.trim().toLowerCase() || "application/octet-stream";
  const blob = deps.media.put(sha256, body, type);
  const host = req.headers.host ?? "127.0.0.1";
  return json(res, 200, {
    url: `http://${host}/media/${sha256}.${blob.ext}`,
    sha256,
    size: blob.bytes.length,
    type: blob.type,
    uploaded: blob.uploaded,
  });
}

type AuthResult = { ok: true; pubkey: string } | { ok: false; status: 401 | 403; error: string };

/** Blossom (kind 24242) or NIP-98 (kind 27235) from a relay member, bound to this blob. */
function authorize(req: IncomingMessage, body: Buffer, action: "get" | "upload", sha256: string, deps: MediaDeps): AuthResult {
  const fail = (error: string): AuthResult => ({ ok: false, status: 401, error });
  const auth = req.headers.authorization;
  if (!auth?.startsWith("Nostr ")) return fail("missing Nostr auth (Blossom kind 24242 or NIP-98)");
  let ev: Event;
  try {
    ev = JSON.parse(Buffer.from(auth.slice(6).trim(), "base64").toString("utf8")) as Event;
  } catch {
    return fail("authorization is not base64 of a JSON event");
  }
  let pubkey: string;
  if (ev?.kind === KIND.httpAuth) {
    const r = deps.nip98.check(req, body);
    if (!r.ok) return r;
    pubkey = r.pubkey;
  } else {
    const bad = shapeReason(ev) ?? verifyReason(ev);
    if (bad) return fail(`Blossom: ${bad.replace(/^invalid: /, "")}`);
    if (ev.kind !== KIND.blossomAuth) return fail(`kind must be ${KIND.blossomAuth} (Blossom) or ${KIND.httpAuth} (NIP-98)`);
    if (tagValue(ev, "t") !== action) return fail(`Blossom: t tag must be ${action}`);
    if (!tagValues(ev, "x").includes(sha256)) return fail("Blossom: no x tag with this blob's sha256");
    const now = nowSec();
    const expiration = Number(tagValue(ev, "expiration"));
    if (!Number.isFinite(expiration) || expiration <= now) return fail("Blossom: expiration missing or passed");
    if (ev.created_at > now + CLOCK_SKEW_SEC) return fail("Blossom: created_at is in the future");
    pubkey = ev.pubkey;
  }
  if (!deps.dir.isRelayMember(pubkey)) return { ok: false, status: 403, error: "restricted: not a relay member" };
  return { ok: true, pubkey };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function json(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
