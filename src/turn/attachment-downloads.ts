/**
 * What a turn does with the files its messages attach (docs/conversations.md
 * "Attachments"): images (to an agent that takes images) and text files such as logs and
 * diffs (to an agent that takes embedded resources) are downloaded — at most
 * `attachments.max_per_turn` per turn, images up to `attachments.max_bytes`, text files up
 * to the smaller of that and 256 KiB — checked against the hash the message claims, checked
 * to be what they say (an image's signature, text's UTF-8), and given to the agent. Every
 * other attachment, and every refused one, is listed in the prompt with the reason.
 *
 * An attachment is downloaded once: what came of it (the file, or the refusal) is kept, so
 * a retry, a later turn or a repeated link neither fetches it again nor logs it twice.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { BoundedMap } from "../base/bounded-map.js";
import { formatBytes } from "../config/size.js";
import type { MediaFetcher } from "../buzz/media-fetch.js";
import { attachmentClass, imageTypeOf, textOf } from "../buzz/media-sniff.js";
import { imetaOf, type Imeta } from "../nostr/imeta.js";
import type { AttachmentOutcome, AttachmentResolver, MediaCapabilities, ResolvedAttachment } from "../prompt/attachment-listing.js";

/** Text files are read whole into the prompt: beyond this they would crowd out the rest. */
export const MAX_TEXT_BYTES = 256 * 1024;

/**
 * What a text file is once checked: UTF-8 without NUL bytes is all the bytes show, so the
 * poster's `m` (which an agent may render as it is) never reaches the block.
 */
const SNIFFED_TEXT = "text/plain";

/**
 * The uri of a file given to the agent: made by the bridge from the sha256 the download
 * was checked against, never the poster's url — agents such as claude-agent-acp show a
 * resource's uri as a text block of its own, outside the untrusted fence (docs/security.md).
 */
export function attachmentUri(sha256: string): string {
  return `attachment://${sha256}`;
}

/** Downloaded files kept for a repeat, in bytes; refusals are kept by count. */
const CACHE_BYTES = 64 * 1024 * 1024;
const CACHE_REFUSALS = 2000;

/** Why an attachment was not given to the agent, beyond the fetcher's own refusals; stable strings. */
type Refusal = "no-sha256" | "too-large" | "not-an-image" | "not-text";

export interface AttachmentsConfig {
  max_bytes: number;
  max_per_turn: number;
}

export interface TurnAttachmentsDeps {
  fetcher: Pick<MediaFetcher, "fetch">;
  config: () => AttachmentsConfig;
  logger: Logger;
}

type Settled = { ok: true; outcome: AttachmentOutcome; bytes: number } | { ok: false; why: string };

export class TurnAttachments implements AttachmentResolver {
  private readonly refused = new BoundedMap<string, string>(CACHE_REFUSALS);
  private readonly files = new Map<string, { outcome: AttachmentOutcome; bytes: number }>();
  private fileBytes = 0;
  /** Downloads under way, so two turns asking for the same file share one. */
  private readonly pending = new Map<string, Promise<Settled>>();

  constructor(private readonly d: TurnAttachmentsDeps) {}

  async resolve(events: Event[], caps: MediaCapabilities): Promise<Map<string, ResolvedAttachment[]>> {
    const cfg = this.d.config();
    let budget = cfg.max_per_turn;
    const out = new Map<string, ResolvedAttachment[]>();
    for (const ev of events) {
      const list: ResolvedAttachment[] = [];
      for (const imeta of imetaOf(ev)) {
        const listed = (why: string): ResolvedAttachment => ({ imeta, outcome: { kind: "listed", why } });
        const cls = attachmentClass(imeta.mime, imeta.url);
        if (cls === "other") {
          list.push(listed("only images and text files are given to agents"));
          continue;
        }
        if (cls === "image" && !caps.image) {
          list.push(listed("this agent does not take images"));
          continue;
        }
        if (cls === "text" && !caps.embeddedContext) {
          list.push(listed("this agent does not take embedded files"));
          continue;
        }
        if (budget <= 0) {
          list.push(listed(`more than attachments.max_per_turn (${cfg.max_per_turn}) files in this turn`));
          continue;
        }
        budget--;
        const settled = await this.settle(ev, imeta, cls, cfg);
        list.push(settled.ok ? { imeta, outcome: settled.outcome } : listed(settled.why));
      }
      if (list.length) out.set(ev.id, list);
    }
    return out;
  }

  /** The attachment's outcome: kept from before, or decided now (one download at most). */
  private settle(ev: Event, imeta: Imeta, cls: "image" | "text", cfg: AttachmentsConfig): Promise<Settled> {
    // The claims are part of the key: the same file announced with another size is judged again.
    const key = `${imeta.sha256 ?? "-"} ${imeta.size ?? "-"} ${cls} ${imeta.url}`;
    const file = this.files.get(key);
    if (file) return Promise.resolve({ ok: true, ...file });
    const why = this.refused.get(key);
    if (why !== undefined) return Promise.resolve({ ok: false, why });
    let p = this.pending.get(key);
    if (!p) {
      p = this.decide(ev, imeta, cls, cfg).finally(() => this.pending.delete(key));
      this.pending.set(key, p);
      void p.then((s) => (s.ok ? this.keepFile(key, s) : this.refused.set(key, s.why)));
    }
    return p;
  }

  private async decide(ev: Event, imeta: Imeta, cls: "image" | "text", cfg: AttachmentsConfig): Promise<Settled> {
    const limit = cls === "image" ? cfg.max_bytes : Math.min(cfg.max_bytes, MAX_TEXT_BYTES);
    const refuse = (reason: string, why: string): Settled => {
      this.d.logger.info({ evt: "attachment.refused", reason, event: ev.id, url: imeta.url.slice(0, 300), why }, "attachment refused");
      return { ok: false, why };
    };
    if (!imeta.sha256) return refuse("no-sha256" satisfies Refusal, "refused: it names no sha256 (x) to check the download against");
    if (imeta.size !== undefined && imeta.size > limit) {
      return refuse(
        "too-large" satisfies Refusal,
        `refused: ${formatBytes(imeta.size)} is larger than the ${formatBytes(limit)} allowed for ${cls === "image" ? "images (attachments.max_bytes)" : "text files"}`,
      );
    }
    const got = await this.d.fetcher.fetch(imeta.url, imeta.sha256, limit);
    if (!got.ok) return refuse(got.reason, `refused: ${got.detail}`);
    if (cls === "image") {
      const type = imageTypeOf(got.bytes);
      if (!type) return refuse("not-an-image" satisfies Refusal, "refused: the file is not a PNG, JPEG, GIF or WebP image");
      this.fetched(ev, imeta, got.bytes.length, type, got.ms, got.via);
      return {
        ok: true,
        bytes: got.bytes.length,
        outcome: {
          kind: "image",
          block: { type: "image", data: got.bytes.toString("base64"), mimeType: type, uri: attachmentUri(imeta.sha256) },
        },
      };
    }
    const text = textOf(got.bytes);
    if (text === undefined) return refuse("not-text" satisfies Refusal, "refused: the file is not UTF-8 text");
    this.fetched(ev, imeta, got.bytes.length, SNIFFED_TEXT, got.ms, got.via);
    return {
      ok: true,
      bytes: got.bytes.length,
      outcome: { kind: "text", block: { type: "resource", resource: { uri: attachmentUri(imeta.sha256), mimeType: SNIFFED_TEXT, text } } },
    };
  }

  private fetched(ev: Event, imeta: Imeta, bytes: number, type: string, ms: number, via: string): void {
    this.d.logger.info(
      { evt: "attachment.fetched", event: ev.id, url: imeta.url.slice(0, 300), bytes, type, ms, via },
      "attachment downloaded",
    );
  }

  /** Keeps a downloaded file for a repeat, forgetting the oldest beyond the byte budget. */
  private keepFile(key: string, s: { outcome: AttachmentOutcome; bytes: number }): void {
    this.files.set(key, { outcome: s.outcome, bytes: s.bytes });
    this.fileBytes += s.bytes;
    for (const [k, f] of this.files) {
      if (this.fileBytes <= CACHE_BYTES) break;
      this.files.delete(k);
      this.fileBytes -= f.bytes;
    }
  }
}
