/**
 * 15: what the records Buzz Desktop reads cost the identity's frame quota at start
 * (docs/protocol.md "Buzz Desktop"): the daemon (its real `Daemon` class, in this process)
 * starts in 1, 10 and 500 channels where it sits as `bot`, on a dev relay with Buzz's limits,
 * once as it runs (profile, directory entry, seats) and once with that part left out, the
 * baseline of the same run. The figure is the difference in the key's frames (WebSocket
 * frames and HTTP calls, as the relay counts them) once start has settled: target ≤ 3.
 * Run alone: `node --import tsx bench/desktop.ts` (build first: the demo agent is dist/cli.js).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { stringify } from "yaml";
import { loadConfig } from "../src/config/load.js";
import { startDevRelay } from "../src/devrelay/index.js";
import { Daemon } from "../src/app/daemon/daemon.js";
import { createLogger } from "../src/base/log.js";
import { RelayClient } from "../src/relay/client.js";
import { initCrypto } from "../src/nostr/verify.js";
import { sleep, waitFor } from "../kit/wait.js";
import { runIfMain } from "./standalone.js";

export const DESKTOP_COUNTS = [1, 10, 500] as const;
/** After start: long enough for replayed membership notices and the records' publishes to land. */
const SETTLE_MS = 3000;

async function run(channels: number, records: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "bench-desktop-"));
  const relay = await startDevRelay({ port: 0 });
  const bridgeSk = generateSecretKey();
  const bridge = getPublicKey(bridgeSk);
  const ownerSk = generateSecretKey();
  const owner = getPublicKey(ownerSk);
  relay.addRelayMember(bridge);
  for (let i = 0; i < channels; i++) {
    const ch = await relay.createChannel({ name: `desk-${i}`, members: [owner] });
    await relay.addMember(ch, bridge, "bot");
  }
  const observer = new RelayClient({ url: relay.url, secretKey: ownerSk });
  let daemon: Daemon | undefined;
  try {
    const file = join(dir, "bridge.yaml");
    writeFileSync(
      file,
      stringify({
        identity: { secret_key: nip19.nsecEncode(bridgeSk), owner: nip19.npubEncode(owner), profile: { name: "bench" } },
        relay: { url: relay.url },
        agent: {
          command: process.execPath,
          args: [fileURLToPath(new URL("../dist/cli.js", import.meta.url)), "demo-agent"],
          cwd: join(dir, "work", "{channel}"),
        },
        state_dir: join(dir, "state"),
        log: { level: "warn" },
        shutdown_grace: "2s",
      }),
    );
    daemon = new Daemon({ loaded: loadConfig(file), logger: createLogger({ level: "error" }) });
    // The baseline: the same daemon with its Desktop records left out.
    if (!records) (daemon as unknown as { startRecords: () => void }).startRecords = () => undefined;
    const before = relay.keyUsage(bridge);
    await daemon.start();
    if (records) {
      await observer.start();
      await waitFor(async () => (await observer.query([{ kinds: [10100], authors: [bridge] }])).length === 1, {
        timeoutMs: 60_000,
        what: "bench desktop: the directory entry on the relay",
      });
    }
    await sleep(SETTLE_MS);
    const after = relay.keyUsage(bridge);
    return after.wsFrames + after.httpCalls - (before.wsFrames + before.httpCalls);
  } finally {
    observer.stop();
    await daemon?.stop().catch(() => undefined);
    await relay.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchDesktop(): Promise<Record<string, { with: number; without: number; extra: number }>> {
  await initCrypto();
  const out: Record<string, { with: number; without: number; extra: number }> = {};
  for (const n of DESKTOP_COUNTS) {
    const without = await run(n, false);
    const withRecords = await run(n, true);
    out[n] = { with: withRecords, without, extra: withRecords - without };
  }
  return out;
}

runIfMain(import.meta.url, benchDesktop);
