/**
 * Failure domains of the relay client, each with a message a user can act on.
 */

/** The relay refused our NIP-42 AUTH (not a member, banned, bad clock…). */
export class RelayAuthError extends Error {
  override name = "RelayAuthError";
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(
      `relay ${url} refused authentication: ${reason || "(no reason given)"}; check that the bridge's pubkey is a relay member and the clock is in sync`,
    );
  }
}

/** An HTTP bridge call (`/query`, `/count`, `/events`) failed for good. */
export class RelayHttpError extends Error {
  override name = "RelayHttpError";
  constructor(
    readonly url: string,
    readonly status: number,
    readonly relayMessage: string,
  ) {
    super(`relay HTTP ${url} answered ${status || "no response"}: ${relayMessage || "(empty body)"}`);
  }
}

/** A read over the WebSocket (relays without an HTTP bridge) did not complete. */
export class RelayQueryError extends Error {
  override name = "RelayQueryError";
}

/** The client was used in a way that cannot work (not started, stopped, bad URL). */
export class RelayUsageError extends Error {
  override name = "RelayUsageError";
}

/** No authenticated connection could be made in time (relay down, wrong URL, firewall). */
export class RelayUnreachableError extends Error {
  override name = "RelayUnreachableError";
  constructor(
    readonly url: string,
    readonly waitedMs: number,
  ) {
    super(`could not connect to relay ${url} within ${waitedMs} ms; check relay.url and that the relay is running and reachable`);
  }
}

/**
 * True when `err` says the relay could not be reached (no answer, a 5xx or 429, no
 * connection), which can pass; false for a refusal that stays one (401, 403, 400).
 */
export function isRelayOutage(err: unknown): boolean {
  if (err instanceof RelayHttpError) return err.status === 0 || err.status === 429 || err.status >= 500;
  if (err instanceof RelayQueryError) return /not connected|connection lost/.test(err.message);
  return err instanceof RelayUnreachableError;
}
