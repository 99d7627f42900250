/**
 * What `run` waits for at start: the relay's channel list and, in fleet mode, the fleet's
 * database. Either may come up after the daemon (both restarted at boot, an upgrade), so
 * each is retried with backoff (1 s doubling to 30 s), as the connection itself is, instead
 * of exiting; a stop signal (`signal`) ends the wait, and a refusal that waiting cannot
 * change ends the start.
 */
import { retry } from "../../base/retry.js";
import type { Logger } from "../../base/log.js";
import { npub } from "../../config/keys.js";
import type { PostgresStore } from "../../queue/pg-store.js";
import { QueueStoreError, StateRefusedError } from "../../queue/errors.js";
import { refusalAdvice } from "../../relay/auth-advice.js";
import type { ChannelInfo } from "../../buzz/directory.js";
import { RelayHttpError } from "../../relay/errors.js";
import { InstanceConflictError } from "../../buzz/instance.js";

/** start() gave up waiting because a stop was requested: not a failure. */
export class StartAbortedError extends Error {
  override name = "StartAbortedError";
  constructor(cause: unknown) {
    super("stopped during start-up while waiting for the relay", { cause });
  }
}

/**
 * Tries `attempt` until it succeeds. A failure `fatal` accepts is thrown as it is; any other
 * is reported through `onRetry` with the delay before the next try. An abort, seen before or
 * after the wait, ends it with StartAbortedError.
 */
async function untilUp<T>(
  attempt: () => Promise<T>,
  o: { signal: AbortSignal; fatal?: (err: unknown) => boolean; onRetry: (err: unknown, delayMs: number) => void },
): Promise<T> {
  try {
    return await retry(attempt, {
      backoff: { baseMs: 1000, capMs: 30_000, jitter: 0 },
      signal: o.signal,
      retryable: (err) => !o.fatal?.(err),
      onRetry: (_attempt, err, delay) => o.onRetry(err, delay),
    });
  } catch (err) {
    if (o.signal.aborted && !o.fatal?.(err)) throw new StartAbortedError(err);
    throw err;
  }
}

/** What the relay says of this identity, for a start-up wait: its refusal, or undefined when it refused nothing. */
interface RelayRefusal {
  /** The connection's last NIP-42 refusal, if any. */
  lastAuthError: () => string | undefined;
  pubkey: string;
}

/**
 * One start-up wait on the relay's retry line: a refusal of the identity says which npub
 * to add (the same advice whichever request met it first); anything else, `otherwise`.
 */
function relayRetry(logger: Logger, r: RelayRefusal, otherwise: string): (err: unknown, delay: number) => void {
  return (err, delay) => {
    const refused = err instanceof RelayHttpError && (err.status === 401 || err.status === 403) ? err.relayMessage : r.lastAuthError();
    const msg = refused !== undefined ? `the relay refused this identity: ${refusalAdvice(refused, r.pubkey)}; retrying` : otherwise;
    logger.warn(
      {
        evt: "daemon.discovery_retry",
        err: err instanceof Error ? err.message : String(err),
        retry_ms: delay,
        ...(refused !== undefined ? { npub: npub(r.pubkey) } : {}),
      },
      msg,
    );
  };
}

/** The first channel discovery; a refusal of the identity is retried too, with advice in the warning. */
export function discoverChannelsAtStart(
  o: RelayRefusal & { refresh: () => Promise<ChannelInfo[]>; signal: AbortSignal; logger: Logger },
): Promise<ChannelInfo[]> {
  return untilUp(o.refresh, {
    signal: o.signal,
    onRetry: relayRetry(o.logger, o, "cannot list channels yet (is the relay up?); retrying"),
  });
}

/** The fleet's database; a refusal (another identity, a newer schema) ends the start. */
export async function openFleetStoreAtStart(o: {
  url: string;
  pubkey: string;
  /** The identity's schema (pgSchemaFor). */
  schema: string;
  signal: AbortSignal;
  logger: Logger;
}): Promise<PostgresStore> {
  // Loaded only here: a daemon on SQLite never loads the PostgreSQL client (bench figure 7).
  const { PostgresStore } = await import("../../queue/pg-store.js");
  const store = await untilUp(() => PostgresStore.open({ url: o.url, identity: o.pubkey, schema: o.schema }), {
    signal: o.signal,
    fatal: (err) => !(err instanceof QueueStoreError) || err instanceof StateRefusedError,
    onRetry: (err, delay) =>
      o.logger.warn(
        { evt: "state.unreachable", err: (err as Error).message, retry_ms: delay },
        "cannot use the fleet's database yet; retrying",
      ),
  });
  o.logger.info({ evt: "state.opened", backend: "postgres", where: store.where }, "fleet state database ready");
  return store;
}

/**
 * Announces this daemon on the relay (buzz/instance.ts), waiting for a relay that cannot be
 * asked yet; another live instance of the identity ends the start (InstanceConflictError).
 */
export function claimInstanceAtStart(o: RelayRefusal & { claim: () => Promise<void>; signal: AbortSignal; logger: Logger }): Promise<void> {
  return untilUp(o.claim, {
    signal: o.signal,
    fatal: (err) => err instanceof InstanceConflictError,
    onRetry: relayRetry(o.logger, o, "cannot ask the relay for other daemons of this identity yet (is the relay up?); retrying"),
  });
}
