/** The notice for mentions the queue refused (a scope over its cap, or the queue full). */
import type { EventTemplate } from "nostr-tools";
import type { Refusal } from "../queue/refusals.js";
import { message } from "../nostr/events.js";

export function refusalNotice(r: Refusal): EventTemplate {
  const who = [...new Set(r.events.map((e) => e.author))];
  const text = `I'm too far behind in this ${r.reason === "scope-cap" ? "thread" : "bridge"} and skipped ${r.events.length} older message${r.events.length === 1 ? "" : "s"}; please ask again if still needed.`;
  return message(r.channel, text, { mentions: who });
}
