/**
 * Uploading a file the agent attaches to a reply (docs/conversations.md "Attachments") to
 * the relay's media endpoint: `PUT /upload` with the raw bytes, `X-SHA-256`, and a Blossom
 * authorization for exactly that hash (a NIP-98 one when the relay refuses it). The relay
 * answers a blob descriptor whose url goes into the reply's `imeta` tag.
 */
import { createHash } from "node:crypto";
import { blossomHeader } from "../nostr/blossom.js";
import { nip98Header, type SigningKey } from "../nostr/nip98.js";
import { BodyTooLargeError } from "../base/http-body.js";
import { httpRequest, type HttpAnswer } from "../base/http-request.js";

/** An upload's answer is a blob descriptor (BUD-02), a few hundred bytes; an error page a few KiB. */
const ANSWER_MAX_BYTES = 64 * 1024;

export interface BlobDescriptor {
  url: string;
  sha256: string;
  size: number;
  type: string;
}

export class MediaUploadError extends Error {
  override name = "MediaUploadError";
}

export interface UploadOptions {
  relayOrigin: string;
  /** The key, or the relay client's `sign`. */
  key: SigningKey;
  /** Default 60 s. */
  timeoutMs?: number;
}

export async function uploadBlob(o: UploadOptions, bytes: Uint8Array, type: string): Promise<BlobDescriptor> {
  const url = `${o.relayOrigin}/upload`;
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const put = (authorization: string) =>
    httpRequest(url, {
      method: "PUT",
      headers: { authorization, "content-type": type, "x-sha-256": sha256 },
      body: bytes,
      timeoutMs: o.timeoutMs ?? 60_000,
      maxBytes: ANSWER_MAX_BYTES,
    });
  let res: HttpAnswer;
  try {
    res = await put(blossomHeader("upload", sha256, o.key, new URL(url).host));
    if (res.status === 401) res = await put(nip98Header(url, "PUT", bytes, o.key));
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw new MediaUploadError(`the relay's answer to the upload is too large: ${err.message}`);
    throw new MediaUploadError(`upload to ${url} failed: ${(err as Error).message}`);
  }
  const text = res.text;
  if (!res.ok) throw new MediaUploadError(`the relay refused the upload (HTTP ${res.status}): ${text.slice(0, 200)}`);
  let d: Partial<BlobDescriptor>;
  try {
    d = JSON.parse(text) as Partial<BlobDescriptor>;
  } catch {
    throw new MediaUploadError(`the relay's upload answer is not JSON: ${text.slice(0, 120)}`);
  }
  if (typeof d.url !== "string" || d.sha256 !== sha256)
    throw new MediaUploadError("the relay's upload answer names no url for this file's hash");
  return { url: d.url, sha256, size: typeof d.size === "number" ? d.size : bytes.length, type: typeof d.type === "string" ? d.type : type };
}
