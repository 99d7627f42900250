/** Shared set-up for the relay client tests: a dev relay, keys, clients with short backoffs. */
import { generateSecretKey, getPublicKey, type Event } from "nostr-tools";
import { startDevRelay, type DevRelay, type DevRelayOptions } from "../src/devrelay/index.js";
import { RelayClient, type RelayClientOptions } from "../src/relay/client.js";

export interface Identity {
  sk: Uint8Array;
  pk: string;
}

export function identity(): Identity {
  const sk = generateSecretKey();
  return { sk, pk: getPublicKey(sk) };
}

/** Test timing: reconnect in tens of ms, not seconds. */
export const FAST = { backoff: { baseMs: 50, capMs: 400 }, resetAfterMs: 2000, challengeWaitMs: 2000, authTimeoutMs: 3000 };

export async function relayWith(members: Identity[], opts: DevRelayOptions = {}): Promise<DevRelay> {
  const relay = await startDevRelay({ port: 0, ...opts });
  for (const m of members) relay.addRelayMember(m.pk);
  return relay;
}

export function client(relay: { url: string }, who: Identity, extra: Partial<RelayClientOptions> = {}): RelayClient {
  return new RelayClient({ url: relay.url, secretKey: who.sk, connection: FAST, http: { retryBaseMs: 50 }, publish: { retryBaseMs: 50, reconnectWaitMs: 10_000 }, ...extra });
}

/** Collects emitted events by id, counting deliveries (exactly-once checks). */
export function collector(c: RelayClient) {
  const seen = new Map<string, number>();
  const events: Event[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  c.on("event", (ev) => {
    seen.set(ev.id, (seen.get(ev.id) ?? 0) + 1);
    events.push(ev);
    for (const w of waiters) if (seen.size >= w.n) w.resolve();
  });
  return {
    seen,
    events,
    /** Resolves true once `n` distinct events have arrived, false after `ms`. */
    until(n: number, ms = 20_000): Promise<boolean> {
      if (seen.size >= n) return Promise.resolve(true);
      return new Promise((resolve) => {
        const t = setTimeout(() => resolve(false), ms);
        waiters.push({ n, resolve: () => (clearTimeout(t), resolve(true)) });
      });
    },
  };
}

export const mention = (channel: string, to: string, text: string) => ({ kind: 9, created_at: Math.floor(Date.now() / 1000), content: text, tags: [["h", channel], ["p", to]] });

export const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 20 ms; true when it held within `ms`. */
export async function eventually(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await wait(20);
  }
  return cond();
}
