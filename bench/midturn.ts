/**
 * Mid-turn latency: a message published while its thread's turn runs → the agent has it.
 * The same scripted turn every time (`#slow 3000`, the demo agent), the message sent
 * 300 ms into it, three ways, each on its own channel:
 *  - steer, native: the demo agent advertises `_session/steering` (DEMO_AGENT_STEERING=1)
 *    and reports when the steer reached it (`Steered in at <ISO time>`);
 *  - steer, cancel-and-merge: the agent does not; the turn is cancelled and re-prompted
 *    (`Received: <ISO time>` of the merged prompt);
 *  - queue (the baseline): the message waits for the turn to end and starts the next one.
 * Times come from the agent's reply (same machine, same clock). Real daemons
 * (`buzz-bridge run` subprocesses), real dev relay, real demo agent.
 * Run alone: `node --import tsx bench/midturn.ts` (build first: the daemon is dist/cli.js).
 */
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { sleep, waitFor } from "../kit/wait.js";
import { runIfMain } from "./standalone.js";

const SAMPLES = Number(process.env.BENCH_MIDTURN_SAMPLES ?? 5);
const TURN_MS = 3000;
const SEND_AFTER_MS = 300;

export interface MidTurnResult {
  native: number[];
  merge: number[];
  queue: number[];
  turn_ms: number;
  send_after_ms: number;
}

async function sample(w: World, d: DaemonProc, channel: string, read: (reply: string) => number | undefined): Promise<number> {
  const from = d.logs.length;
  const first = await w.owner.post(`@agent #slow ${TURN_MS} long job`, { channel });
  await d.waitLog((l) => d.logs.indexOf(l) >= from && l.evt === "agent.turn_start");
  await sleep(SEND_AFTER_MS);
  const sent = Date.now();
  const second = await w.owner.post("@agent also this", { replyTo: first, channel });
  const arrivedAt = async () => {
    const replies: Event[] = await w.query({ kinds: [9], authors: [w.agent.pk], "#e": [first.id] });
    return replies.map((r) => read(r.content)).find((at) => at !== undefined);
  };
  const at = await waitFor(arrivedAt, {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: `midturn bench: a reply carrying the arrival time of ${second.id}`,
  });
  return at - sent;
}

export async function benchMidTurn(): Promise<MidTurnResult> {
  const w = await World.create({ channelName: "merge-room" });
  try {
    const merge = w.channel;
    const queue = await w.addChannel({ name: "queue-room" });
    const native = await w.addChannel({ name: "native-room" });
    const common = { defaults: { respond_to: "owner-only" }, log: { level: "debug" } };
    // Two daemons of one identity on disjoint channels: one agent steers natively, one does not.
    const plain = await w.startDaemon(
      {},
      {
        configFile: w.writeConfig(
          { ...common, channels: [{ id: merge }, { id: queue, mid_turn: "queue" }], state_dir: join(w.dir, "state-plain") },
          "plain.yaml",
        ),
      },
    );
    const steering = await w.startDaemon(
      {},
      {
        configFile: w.writeConfig(
          { ...common, channels: [{ id: native }], state_dir: join(w.dir, "state-native"), agent: { env: { DEMO_AGENT_STEERING: "1" } } },
          "native.yaml",
        ),
      },
    );
    const ms = (iso: string | undefined) => (iso ? Date.parse(iso) : NaN) || undefined;
    const steeredAt = (text: string) => ms(/Steered in at (\S+): @agent also this/.exec(text)?.[1]);
    const receivedFor = (text: string) => (/Asked: @agent also this/.test(text) ? ms(/Received: (\S+)/.exec(text)?.[1]) : undefined);
    const out: MidTurnResult = { native: [], merge: [], queue: [], turn_ms: TURN_MS, send_after_ms: SEND_AFTER_MS };
    for (let i = 0; i < SAMPLES; i++) {
      out.native.push(await sample(w, steering, native, steeredAt));
      out.merge.push(await sample(w, plain, merge, receivedFor));
      out.queue.push(await sample(w, plain, queue, receivedFor));
    }
    return out;
  } finally {
    await w.close();
  }
}

runIfMain(import.meta.url, benchMidTurn);
