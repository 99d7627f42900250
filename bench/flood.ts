/**
 * An agent told to flood (docs/security.md), timed:
 *
 *   split   splitting a 16 MiB message into relay-sized parts vs sixteen 1 MiB ones: linear
 *           splitting makes the ratio about 1 (it was quadratic: 10 MiB took 2.5 s).
 *   intake  another channel's mention, relay publish → the daemon's `gate.accepted`, while a
 *           turn posts the most it may (replies.max_per_turn messages of replies.max_bytes,
 *           here 20 × 1 MiB, split into parts), vs the same with no other turn running.
 *
 * Run alone: `node --import tsx bench/flood.ts` (build first: the daemon runs from dist/).
 */
import { splitContent } from "../src/nostr/split.js";
import { KIND } from "../src/nostr/kinds.js";
import { World } from "../kit/world.js";
import { runIfMain } from "./standalone.js";

const SAMPLES = Number(process.env.BENCH_FLOOD_SAMPLES ?? 5);
const MIB = 1024 * 1024;

export interface FloodBench {
  /** ms to split 16 MiB, and 16 × the ms to split 1 MiB, per round. */
  split16: number[];
  split1x16: number[];
  /** ms from publish to gate.accepted for another channel's mention, quiet and during a flooding turn. */
  intakeQuiet: number[];
  intakeFlood: number[];
}

/** A text like an agent's long output: lines, quotes, some non-ASCII. */
function text(bytes: number): string {
  const line = 'a line of "output" with ünïcode and a tab\there, then more words to fill it up.\n';
  return line.repeat(Math.ceil(bytes / Buffer.byteLength(line))).slice(0, bytes);
}

function timeSplit(t: string): number {
  const t0 = performance.now();
  splitContent(t);
  return performance.now() - t0;
}

async function intake(): Promise<{ quiet: number[]; flood: number[] }> {
  const w = await World.create({ channelName: "flood-room", noLimits: true });
  try {
    const other = await w.addChannel({ name: "other-room" });
    const d = await w.startDaemon({ relay: { presence: false }, replies: { max_bytes: "1MiB", max_per_turn: 20 }, log: { level: "info" } });
    const accepted = async (channel: string, i: number): Promise<number> => {
      const t0 = Date.now();
      const ev = await w.owner.post(`@agent ping ${i}`, { channel });
      const line = await d.waitLog((l) => l.evt === "gate.accepted" && l.event === ev.id, 120_000);
      await w.waitReplies(ev, 1, 120_000);
      return Number(line.time) - t0;
    };
    const quiet: number[] = [];
    const flood: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      quiet.push(await accepted(other, i));
      // The flooding turn: 20 messages of 1 MiB at once; measured once its first message is out.
      const big = await w.owner.post(`@agent #burst 20 ${MIB - 64}`);
      await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [big.id] }, (e) => e.length >= 1, 120_000);
      flood.push(await accepted(other, 100 + i));
      await w.waitReaction(big, "✅", 300_000);
    }
    return { quiet, flood };
  } finally {
    await w.close();
  }
}

export async function benchFlood(): Promise<FloodBench> {
  const big = text(16 * MIB);
  const small = text(MIB);
  const split16: number[] = [];
  const split1x16: number[] = [];
  for (let i = 0; i < SAMPLES + 1; i++) {
    const a = timeSplit(big);
    const b = timeSplit(small) * 16;
    if (i > 0) {
      split16.push(a);
      split1x16.push(b);
    }
  }
  const { quiet, flood } = await intake();
  return { split16, split1x16, intakeQuiet: quiet, intakeFlood: flood };
}

runIfMain(import.meta.url, benchFlood);
