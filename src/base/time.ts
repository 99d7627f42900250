/**
 * Nostr time: `created_at` and every relay-side clock comparison are whole seconds since
 * the Unix epoch (docs/protocol.md §4).
 */

/** The current time in whole seconds, rounded down as NIP-01's `created_at` is. */
export function nowSec(): number {
  return Math.floor(Date.now() / 1000);
}
