/**
 * Attachment download overhead: an image on the dev relay's media store (1 MiB) fetched the
 * way a turn fetches it — the bridge's downloader (MediaFetcher: a Blossom authorization
 * signed per request, the host policy, the size cap, the sha256 check) — against a plain
 * HTTP GET of the same bytes (undici fetch, one authorization made beforehand), in the same
 * run, alternating. Run alone: `node --import tsx bench/attachments.ts`.
 */
import { generateSecretKey, getPublicKey } from "nostr-tools";
import { randomBytes } from "node:crypto";
import { startDevRelay } from "../src/devrelay/index.js";
import { MediaFetcher } from "../src/buzz/media-fetch.js";
import { uploadBlob } from "../src/buzz/media-upload.js";
import { blossomHeader } from "../src/nostr/blossom.js";
import { runIfMain } from "./standalone.js";

const ROUNDS = 40;
const SIZE = 1024 * 1024;

export async function benchAttachments(): Promise<{ fetcher: number[]; plain: number[]; bytes: number }> {
  const relay = await startDevRelay({ noLimits: true });
  try {
    const sk = generateSecretKey();
    await relay.createChannel({ name: "bench", members: [getPublicKey(sk)] });
    const bytes = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(SIZE - 8)]);
    const blob = await uploadBlob({ relayOrigin: relay.httpUrl, key: sk }, bytes, "image/png");
    const fetcher = new MediaFetcher({ relayOrigin: relay.httpUrl, key: sk, settings: () => ({ allowHosts: [], timeoutMs: 30_000 }) });
    const auth = blossomHeader("get", blob.sha256, sk);
    const plainGet = async () => {
      const res = await fetch(blob.url, { headers: { authorization: auth } });
      return Buffer.from(await res.arrayBuffer()).length;
    };
    const ours = async () => {
      const r = await fetcher.fetch(blob.url, blob.sha256, 10 * SIZE);
      if (!r.ok) throw new Error(`fetch refused: ${r.reason} ${r.detail}`);
      return r.bytes.length;
    };
    // Warm both paths (connections, JIT) before timing.
    for (let i = 0; i < 3; i++) await Promise.all([ours(), plainGet()]);
    const fetcherMs: number[] = [];
    const plainMs: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      for (const [fn, out] of (i % 2
        ? [
            [ours, fetcherMs],
            [plainGet, plainMs],
          ]
        : [
            [plainGet, plainMs],
            [ours, fetcherMs],
          ]) as [() => Promise<number>, number[]][]) {
        const t0 = performance.now();
        const n = await fn();
        out.push(performance.now() - t0);
        if (n !== SIZE) throw new Error(`got ${n} bytes, expected ${SIZE}`);
      }
    }
    return { fetcher: fetcherMs, plain: plainMs, bytes: SIZE };
  } finally {
    await relay.close();
  }
}

runIfMain(import.meta.url, benchAttachments, (r) => {
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(JSON.stringify({ fetcher_median_ms: med(r.fetcher), plain_median_ms: med(r.plain), ratio: med(r.fetcher) / med(r.plain) }));
});
