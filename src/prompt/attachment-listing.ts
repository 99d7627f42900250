/**
 * A message's attachments in the prompt (docs/conversations.md "Attachments"): every one
 * is listed — name, type, size, url — with what became of it: given to the agent below as
 * an image or a text file, or not, and why. Names, descriptions, types, sizes and urls are
 * all written by the poster, so the listing goes inside the untrusted fence. The files
 * given below carry only what the bridge made of them (src/turn/attachment-downloads.ts): their uri
 * is `attachment://<sha256>`, their type the one their bytes show.
 */
import type { Event } from "nostr-tools";
import { attachmentName, imetaOf, type Imeta } from "../nostr/imeta.js";
import { formatBytes } from "../config/size.js";
import { fence, oneLine, p, type ImageBlock, type PromptText, type ResourceBlock } from "./text.js";

/** What the bridge made of one attachment. */
export type AttachmentOutcome =
  | { kind: "image"; block: ImageBlock }
  | { kind: "text"; block: ResourceBlock }
  /** Not given to the agent; `why` says why in a few words (a refusal or a limit). */
  | { kind: "listed"; why: string };

export interface ResolvedAttachment {
  imeta: Imeta;
  outcome: AttachmentOutcome;
}

/** What the agent takes besides text (its ACP promptCapabilities). */
export interface MediaCapabilities {
  image: boolean;
  embeddedContext: boolean;
}

/** Turns the attachments of a turn's messages into outcomes (downloads included); by event id. */
export interface AttachmentResolver {
  resolve(events: Event[], caps: MediaCapabilities): Promise<Map<string, ResolvedAttachment[]>>;
}

/** Attachments of a message that is only shown (history): listed, never downloaded. */
export function listedOnly(ev: Event): ResolvedAttachment[] {
  return imetaOf(ev).map((imeta) => ({ imeta, outcome: { kind: "listed", why: "earlier message; not downloaded" } }));
}

/**
 * The listing of one message's attachments, fenced; `firstBlock` numbers the files given
 * below so the agent can match "image 2" with the second block after this message.
 */
export function attachmentListing(list: ResolvedAttachment[]): PromptText | undefined {
  if (!list.length) return undefined;
  let given = 0;
  const lines = list.map((a, i) => {
    const m = a.imeta;
    const parts = [
      oneLine(attachmentName(m), 120),
      m.mime ?? "type not given",
      m.size !== undefined ? formatBytes(m.size) : "size not given",
    ];
    const status =
      a.outcome.kind === "listed"
        ? `not given to you: ${a.outcome.why}`
        : `given to you below as ${a.outcome.kind === "image" ? "an image" : "a text file"} (file ${++given} after this message, ${blockUri(a.outcome)})`;
    const alt = m.alt ? `; described as "${oneLine(m.alt, 200)}"` : "";
    return `${i + 1}. ${parts.join(", ")}; ${oneLine(m.url, 300)}${alt} — ${status}`;
  });
  return p`Attachments (${list.length}; names, descriptions, types and sizes as the poster gave them):\n${fence(lines.join("\n"))}`;
}

function blockUri(o: AttachmentOutcome): string {
  if (o.kind === "image") return o.block.uri ?? "no uri";
  if (o.kind === "text") return o.block.resource.uri;
  return "no uri";
}

/** The files to put after the message's text block, in listing order. */
export function attachmentBlocks(list: ResolvedAttachment[]): (ImageBlock | ResourceBlock)[] {
  return list.flatMap((a) => (a.outcome.kind === "listed" ? [] : [a.outcome.block]));
}
