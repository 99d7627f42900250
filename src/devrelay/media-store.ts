/**
 * The dev relay's blob store for Buzz's media routes (docs/dev-relay.md "Media"): blobs by
 * sha256, in memory, or as files under `<data>/media` when the relay keeps its data (a
 * restart on the same directory keeps them). The type is what the uploader said; the file
 * extension follows from it.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { extForType } from "../base/mime.js";

export interface Blob {
  sha256: string;
  bytes: Buffer;
  type: string;
  ext: string;
  uploaded: number;
}

export class MediaStore {
  private readonly blobs = new Map<string, Blob>();
  /** GET and HEAD requests served, for tests that count downloads. */
  reads = 0;

  /** `dir`: where blobs live on disk; none keeps them in memory only. */
  constructor(private readonly dir?: string) {
    if (dir) mkdirSync(dir, { recursive: true });
  }

  put(sha256: string, bytes: Buffer, type: string): Blob {
    const existing = this.get(sha256);
    if (existing) return existing;
    const blob: Blob = { sha256, bytes, type, ext: extForType(type), uploaded: Math.floor(Date.now() / 1000) };
    if (this.dir) {
      writeFileSync(join(this.dir, sha256), bytes);
      writeFileSync(join(this.dir, `${sha256}.json`), JSON.stringify({ type: blob.type, ext: blob.ext, uploaded: blob.uploaded }));
    } else this.blobs.set(sha256, blob);
    return blob;
  }

  get(sha256: string): Blob | undefined {
    const mem = this.blobs.get(sha256);
    if (mem || !this.dir) return mem;
    const meta = join(this.dir, `${sha256}.json`);
    if (!existsSync(meta)) return undefined;
    const m = JSON.parse(readFileSync(meta, "utf8")) as { type: string; ext: string; uploaded: number };
    return { sha256, bytes: readFileSync(join(this.dir, sha256)), ...m };
  }
}
