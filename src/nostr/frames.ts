/**
 * Relay → client frames (NIP-01, NIP-42) parsed into a typed union. Anything malformed comes
 * back as `{ type: "invalid", reason }`, so a relay sending garbage cannot throw in our handler.
 */
import type { Event } from "nostr-tools";
import { eventShapeProblem } from "./validate.js";

export type RelayFrame =
  | { type: "EVENT"; sub: string; event: Event }
  | { type: "OK"; id: string; ok: boolean; reason: string }
  | { type: "EOSE"; sub: string }
  | { type: "CLOSED"; sub: string; reason: string }
  | { type: "AUTH"; challenge: string }
  | { type: "NOTICE"; message: string }
  | { type: "invalid"; reason: string };

export function parseRelayFrame(text: string): RelayFrame {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return { type: "invalid", reason: "not JSON" };
  }
  if (!Array.isArray(msg) || typeof msg[0] !== "string") return { type: "invalid", reason: "not a NIP-01 array" };
  const [type, a, b, c] = msg as [string, unknown, unknown, unknown];
  const str = (x: unknown) => (typeof x === "string" ? x : undefined);
  switch (type) {
    case "EVENT": {
      if (str(a) === undefined) return { type: "invalid", reason: "EVENT without subscription id" };
      const problem = eventShapeProblem(b);
      return problem ? { type: "invalid", reason: `EVENT ${problem}` } : { type, sub: a as string, event: b as Event };
    }
    case "OK":
      if (str(a) === undefined || typeof b !== "boolean") return { type: "invalid", reason: "malformed OK" };
      return { type, id: a as string, ok: b, reason: str(c) ?? "" };
    case "EOSE":
      return str(a) === undefined ? { type: "invalid", reason: "EOSE without id" } : { type, sub: a as string };
    case "CLOSED":
      return str(a) === undefined ? { type: "invalid", reason: "CLOSED without id" } : { type, sub: a as string, reason: str(b) ?? "" };
    case "AUTH":
      return str(a) === undefined ? { type: "invalid", reason: "AUTH without challenge" } : { type, challenge: a as string };
    case "NOTICE":
      return { type, message: str(a) ?? "" };
    default:
      return { type: "invalid", reason: `unknown frame type ${type.slice(0, 20)}` };
  }
}
