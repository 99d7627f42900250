/**
 * One-shot relay check for `doctor` and start-up: connect, authenticate with NIP-42, report.
 * Throws a RelayAuthError carrying the relay's own reason, or RelayUnreachableError.
 */
import type { Logger } from "../base/log.js";
import { RelayConnection } from "./connection.js";
import { RelayAuthError, RelayUnreachableError } from "./errors.js";
import { initCrypto } from "../nostr/verify.js";

export interface RelayProbe {
  /** Time to an authenticated (or, unchallenged, usable) connection. */
  ms: number;
  /** The relay sent no NIP-42 challenge and the connection went on unauthenticated (a Buzz relay always challenges). */
  unchallenged: boolean;
}

export async function probeRelay(
  url: string,
  secretKey: Uint8Array,
  opts: { timeoutMs?: number; logger?: Logger } = {},
): Promise<RelayProbe> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  await initCrypto();
  const conn = new RelayConnection({ url, secretKey, logger: opts.logger, backoff: { baseMs: 250, capMs: 1000 } });
  const t0 = Date.now();
  try {
    const refused = new Promise<string>((resolve) => conn.once("auth-failed", resolve));
    conn.start();
    const result = await Promise.race([conn.waitAuthenticated(timeoutMs).then((ok) => ({ ok })), refused.then((reason) => ({ reason }))]);
    if ("reason" in result) throw new RelayAuthError(url, result.reason);
    if (!result.ok) throw conn.lastAuthError ? new RelayAuthError(url, conn.lastAuthError) : new RelayUnreachableError(url, timeoutMs);
    return { ms: Date.now() - t0, unchallenged: conn.unchallenged };
  } finally {
    conn.stop();
  }
}
