/**
 * `npm run bench`: runs every figure of the issue's list, prints one table
 * (figure, samples, median, p99, baseline, ratio, target, met?) and writes
 * `bench/results.json`. Every figure is an absolute value next to a baseline measured in
 * the same run. Each part runs on its own and a failing part becomes a row saying so, so
 * one broken measurement does not hide the others.
 *
 *   1     bench/proxy.ts     proxy overhead vs direct and a byte copier
 *   2     bench/hooks.ts     merged _Stop over 5/10 gates (5 ms each) vs 1 gate, all through the proxy; 1 gate vs direct; one gate hung
 *   2g    bench/pre-tool.ts  tools/call with 1 and 5 pre_tool gates answering at once vs no gate, through the proxy and over HTTP
 *   3, 4  bench/mention.ts   publish → gate decision vs nostr-tools; publish → session/prompt warm vs cold
 *   3, 5a bench/relay.ts     relay client handler latency vs nostr-tools; the client alone subscribing 500 channels
 *   5, 9  bench/quota.ts     at the daemon through a frame-counting proxy, relay with Buzz's limits:
 *                            REQ frames to subscribe 500 channels; frames refused at start and in a
 *                            20-mention burst; frames and HTTP calls per mention against the key's
 *                            one bucket; the burst's last reply vs its quota bound and vs no quota
 *   6, 7  bench/busy.ts      20,000 denied events: decisions/s, CPU, signature checks; RSS
 *   6p    bench/busy.ts      the same under thread participation: replies without a mention in the agent's thread
 *   7b    bench/burst.ts     10,000 mentions through the gate and the queue: heap growth vs the events' own heap
 *   7h    bench/hostile.ts   a hostile relay's 5,000 malformed frames: daemon RSS growth vs the flood's size
 *   8     bench/devrelay.ts  dev relay events/s vs a bare ws echo
 *   4s    bench/mention.ts   publish → session/prompt, warm spare, sandboxed vs not
 *   9     bench/sandbox.ts   agent cold start in the bubblewrap sandbox vs without
 *   10    bench/midturn.ts   a message arriving mid-turn: publish → agent has it, steer (native, cancel-and-merge) vs queue
 *   11    bench/fleet.ts     fleet mode: throughput with 1/2/3 daemons, lease takeover after a SIGKILL, !cancel across daemons vs one, PostgreSQL vs SQLite accept
 *   12    bench/mcp-http.ts  the MCP slot over HTTP: tools/call vs the HTTP floors (SSE, JSON, forwarding) and the stdio proxy; PSS per session both ways
 *   13    bench/attachments.ts  an attached image's download through the bridge vs a plain HTTP GET
 *   14    bench/team.ts      a team in one daemon: idle RSS with 1/3/10 identities vs 1/3/10 daemons, 500 channels each
 *   15    bench/desktop.ts   the records Buzz Desktop reads: extra frames at start in 1/10/500 channels vs without them
 *   16    bench/provider.ts  a refused key: mention → the thread's notice vs mention → reply, same agent (Claude)
 *   S1,S2 bench/flood.ts     splitting 16 MiB vs 16 × 1 MiB; another channel's intake while a turn floods vs quiet
 *
 * BENCH_ONLY=proxy,busy runs a subset (names as above, without .ts); BENCH_RESULTS=FILE writes
 * the results there instead of bench/results.json. bench/compare.ts sets both to run the same
 * parts against another checkout.
 */
import { writeFileSync } from "node:fs";
import { AUTHORS as BUSY_AUTHORS } from "./busy.js";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { runIfMain } from "./standalone.js";

type Raw = Record<string, number>;

export interface Row {
  figure: string;
  measure: string;
  samples: number | null;
  median: number | null;
  p99: number | null;
  unit: string;
  baseline: string;
  ratio: number | null;
  target: string;
  met: boolean | null;
}

/** Figure 2's target: N gates answering in 5 ms cost at most this many times one gate, through the proxy. */
const HOOKS_FANOUT_MAX = 3;
/** Figure 2g's targets: a tools/call with one pre_tool gate, and with five, against no gate (issue 45). */
const PRE_TOOL_ONE_MAX = 1.5;
const PRE_TOOL_FIVE_MAX = 2;
/** Figure 12's target: a tools/call through the HTTP slot against the same client's HTTP floor (issue 44). */
const HTTP_SLOT_FLOOR_MAX = 1.2;
/** Figure 7's target: the idle daemon's RSS in 500 channels on Node 24 (issue 44). */
const IDLE_RSS_MAX_MIB = 100;
/** Figure 7b's target: the heap a 10,000-mention burst leaves behind, against the heap of its events. */
const BURST_HEAP_MAX = 0.25;
/** Figure 7h's target: the daemon's RSS growth from a hostile relay's flood, against the flood's size. */
const HOSTILE_RSS_MAX = 1;
/** Figure 11's cancel target: a fleet's running turn stops within this of the owner's `!cancel` (docs/fleet.md). */
const CANCEL_MAX_MS = 10_000;
/** Figure 14's target: the RSS one more identity adds to a team's daemon (issue: each added identity ≤ 15 MiB). */
const TEAM_IDENTITY_MAX_MIB = 15;
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/** One part: its raw figures, or the reason it could not run. */
async function part<T>(
  name: string,
  load: () => Promise<T>,
): Promise<{ ok: true; value: T; seconds: number } | { ok: false; error: string; seconds: number }> {
  const only = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());
  if (only && !only.includes(name)) return { ok: false, error: "skipped (BENCH_ONLY)", seconds: 0 };
  const t0 = performance.now();
  process.stderr.write(`bench: ${name} …\n`);
  try {
    const value = await load();
    const seconds = r3((performance.now() - t0) / 1000);
    process.stderr.write(`bench: ${name} done in ${seconds.toFixed(1)} s\n`);
    return { ok: true, value, seconds };
  } catch (err) {
    const seconds = r3((performance.now() - t0) / 1000);
    process.stderr.write(`bench: ${name} failed after ${seconds.toFixed(1)} s: ${(err as Error).stack ?? String(err)}\n`);
    return { ok: false, error: (err as Error).message ?? String(err), seconds };
  }
}

function failed(figure: string, measure: string, why: string): Row {
  return {
    figure,
    measure: `${measure} — not measured: ${why}`,
    samples: null,
    median: null,
    p99: null,
    unit: "",
    baseline: "",
    ratio: null,
    target: "",
    met: null,
  };
}

async function main(): Promise<void> {
  const started = Date.now();
  const load0 = loadavg()[0]!;
  const rows: Row[] = [];
  const raw: Record<string, unknown> = {};
  const seconds: Record<string, number> = {};

  // 3, 4 — end to end through the daemon.
  const mention = await part("mention", async () => (await import("./mention.js")).benchMention());
  seconds.mention = mention.seconds;
  if (mention.ok) {
    const m = mention.value;
    raw.mention = {
      gate: { n: m.gate.length, median: r3(pct(m.gate, 50)), p99: r3(pct(m.gate, 99)) },
      nostr_tools: { n: m.nostrTools.length, median: r3(pct(m.nostrTools, 50)), p99: r3(pct(m.nostrTools, 99)) },
      prompt_warm: m.promptWarm.map(r3),
      prompt_cold: m.promptCold.map(r3),
      prompt_warm_unsandboxed: m.promptWarmPlain.map(r3),
    };
    const g = pct(m.gate, 50);
    const b = pct(m.nostrTools, 50);
    rows.push({
      figure: "3",
      measure: "mention: relay publish → bridge gate decision (owner mention, verified, stored)",
      samples: m.gate.length,
      median: r3(g),
      p99: r3(pct(m.gate, 99)),
      unit: "ms",
      baseline: `${fmt(Number(r3(b)))} ms: nostr-tools subscriber, same events`,
      ratio: r3(g / b),
      target: "≤ 1.2×",
      met: g / b <= 1.2,
    });
    const w = pct(m.promptWarm, 50);
    const c = pct(m.promptCold, 50);
    rows.push({
      figure: "4",
      measure: "mention: relay publish → session/prompt to the demo agent, warm spare",
      samples: m.promptWarm.length,
      median: r3(w),
      p99: r3(pct(m.promptWarm, 99)),
      unit: "ms",
      baseline: `${fmt(Number(r3(c)))} ms: cold spawn (p99 ${fmt(Number(r3(pct(m.promptCold, 99))))})`,
      ratio: r3(w / c),
      target: "warm < cold",
      met: w < c,
    });
    const wp = pct(m.promptWarmPlain, 50);
    rows.push({
      figure: "4s",
      measure: "mention: relay publish → session/prompt, warm spare, agent sandbox (auto) vs none",
      samples: m.promptWarm.length,
      median: r3(w),
      p99: r3(pct(m.promptWarm, 99)),
      unit: "ms",
      baseline: `${fmt(Number(r3(wp)))} ms: warm spare, agent.sandbox: off (p99 ${fmt(Number(r3(pct(m.promptWarmPlain, 99))))})`,
      ratio: r3(w / wp),
      target: "≤ 1.2× (sandbox set up before the mention)",
      met: w / wp <= 1.2,
    });
  } else {
    rows.push(failed("3", "mention → gate decision", mention.error), failed("4", "mention → session/prompt", mention.error));
  }

  // 3 (relay client alone), 5.
  const relay = await part("relay", async () => (await import("./relay.js")).benchRelay());
  seconds.relay = relay.seconds;
  if (relay.ok) {
    const r = relay.value as Raw;
    raw.relay = r;
    rows.push({
      figure: "3b",
      measure: "relay client alone: publish → handler",
      samples: r.relay_mentions!,
      median: r.relay_latency_median_ms!,
      p99: r.relay_latency_p99_ms!,
      unit: "ms",
      baseline: `${fmt(Number(r.nostr_tools_latency_median_ms))} ms: nostr-tools subscriber (p99 ${fmt(Number(r.nostr_tools_latency_p99_ms))})`,
      ratio: r.relay_latency_median_vs_nostr_tools!,
      target: "≤ 1.2×",
      met: r.relay_latency_median_vs_nostr_tools! <= 1.2,
    });
    rows.push({
      figure: "5a",
      measure: `relay client alone: subscribe 500 channels, time to EOSE (${r.relay_subscribe_500_req_frames} REQ frames)`,
      samples: 1,
      median: r.relay_subscribe_500_ms!,
      p99: null,
      unit: "ms",
      baseline: `${fmt(Number(r.per_channel_subscribe_500_ms))} ms: one REQ per channel (${fmt(Number(r.per_channel_subscribe_500_req_frames))} frames)`,
      ratio: r.relay_subscribe_500_vs_per_channel!,
      target: "≤ 3 frames, < 1 s",
      met: r.relay_subscribe_500_req_frames! <= 3 && r.relay_subscribe_500_ms! < 1000,
    });
  } else {
    rows.push(failed("5a", "relay client alone: subscribe 500 channels", relay.error));
  }

  // 5 (at the daemon), 9.
  const quota = await part("quota", async () => (await import("./quota.js")).benchQuota());
  seconds.quota = quota.seconds;
  if (quota.ok) {
    const q = quota.value as Raw;
    raw.quota = q;
    const perChannel = relay.ok ? (relay.value as Raw) : undefined;
    rows.push({
      figure: "5",
      measure: `daemon (run) subscribes 500 channels at start, through a frame-counting proxy: time to subscribed (${q.daemon_subscribe_500_req_frames} REQ frames)`,
      samples: 1,
      median: q.daemon_subscribe_500_ms!,
      p99: null,
      unit: "ms",
      baseline: perChannel
        ? `${fmt(Number(perChannel.per_channel_subscribe_500_ms))} ms: one REQ per channel (${fmt(Number(perChannel.per_channel_subscribe_500_req_frames))} frames)`
        : "—",
      ratio: perChannel ? r3(q.daemon_subscribe_500_ms! / perChannel.per_channel_subscribe_500_ms!) : null,
      target: "≤ 3 frames",
      met: q.daemon_subscribe_500_req_frames! <= 3,
    });
    rows.push({
      figure: "9",
      measure: "Buzz-quota relay: frames of the daemon's refused during start with 500 channels",
      samples: 1,
      median: q.start_refused_frames!,
      p99: null,
      unit: "frames",
      baseline: "—",
      ratio: null,
      target: "0",
      met: q.start_refused_frames === 0,
    });
    rows.push({
      figure: "9",
      measure: `Buzz-quota relay: frames of the daemon's refused during a burst of ${q.burst_mentions} owner mentions in ${q.burst_mentions} channels (${q.burst_frames_sent} frames sent)`,
      samples: 1,
      median: q.burst_refused_frames!,
      p99: null,
      unit: "frames",
      baseline: "—",
      ratio: null,
      target: "0",
      met: q.burst_refused_frames === 0,
    });
    rows.push({
      figure: "9",
      measure: `Buzz-quota relay: one mention's cost to the key's one bucket, all connections and HTTP calls (${q.burst_key_ws_frames_per_mention} WebSocket frames + ${q.burst_key_http_calls_per_mention} HTTP calls; ${q.burst_key_refused} refused)`,
      samples: q.burst_mentions!,
      median: q.burst_key_cost_per_mention!,
      p99: null,
      unit: "frames+calls",
      baseline: `${fmt(Number(q.quota_frames_per_minute))} a minute (Buzz's quota per key): ${fmt(Number(q.quota_mentions_per_minute))} mentions a minute at this cost`,
      ratio: r3(q.burst_key_cost_per_mention! / q.quota_frames_per_minute!),
      target: "0 refused",
      met: q.burst_key_refused === 0,
    });
    rows.push({
      figure: "9",
      measure: "burst: last reply after the mentions, vs the quota-bound time of its replies alone",
      samples: 1,
      median: q.burst_last_reply_ms!,
      p99: null,
      unit: "ms",
      baseline: `${fmt(Number(q.burst_replies_quota_bound_ms))} ms: ${q.burst_mentions} replies at 50 frames per 5 s`,
      ratio: q.burst_last_reply_vs_quota_bound!,
      target: "—",
      met: null,
    });
    rows.push({
      figure: "9",
      measure: "burst: last reply under Buzz's quota vs the same burst without quota or budget (agent turns set the pace)",
      samples: 1,
      median: q.burst_last_reply_ms!,
      p99: null,
      unit: "ms",
      baseline: `${fmt(Number(q.unlimited_burst_last_reply_ms))} ms: no relay quota, no frame budget`,
      ratio: q.burst_last_reply_vs_unlimited!,
      target: "≤ 1.2×",
      met: q.burst_last_reply_vs_unlimited! <= 1.2,
    });
  } else {
    rows.push(
      failed("5", "daemon subscribes 500 channels", quota.error),
      failed("9", "frames refused / burst under Buzz's quota", quota.error),
    );
  }

  // 6, 7.
  const busy = await part("busy", async () => (await import("./busy.js")).benchBusy());
  seconds.busy = busy.seconds;
  if (busy.ok) {
    const b = busy.value;
    raw.busy = b;
    rows.push({
      figure: "6",
      measure: `busy channel: gate decisions/s, ${b.events} denied events, require_mention off`,
      samples: b.events,
      median: b.gate_decisions_per_s,
      p99: null,
      unit: "/s",
      baseline: `${fmt(Number(b.relay_delivered_per_s))}/s: relay pace at a nostr-tools subscriber`,
      ratio: b.decisions_vs_relay_pace,
      target: "keeps pace (≥ 0.95×)",
      met: b.decisions_vs_relay_pace >= 0.95,
    });
    rows.push({
      figure: "6",
      measure: "busy channel: daemon CPU for those events",
      samples: b.events,
      median: b.daemon_cpu_s,
      p99: null,
      unit: "s",
      baseline: `${fmt(Number(b.subscriber_cpu_s))} s: nostr-tools subscriber process`,
      ratio: b.daemon_cpu_vs_subscriber,
      target: "—",
      met: null,
    });
    rows.push({
      figure: "6",
      measure: "busy channel: signature checks by the daemon",
      samples: b.events,
      median: b.daemon_signature_checks,
      p99: null,
      unit: "checks",
      baseline: `${fmt(Number(b.subscriber_signature_checks))}: nostr-tools verifies every event`,
      ratio: r3(b.daemon_signature_checks / b.subscriber_signature_checks),
      target: `only events the bridge acts on: none pass the gate, and a 🔒 (once an hour per author) is verified first, so ≤ ${BUSY_AUTHORS}`,
      met: b.daemon_signature_checks <= BUSY_AUTHORS,
    });
    rows.push({
      figure: "7",
      measure: `daemon RSS idle, 500 channels (${fmt(b.daemon_rss_idle_after_gc_mib)} MiB after a full GC; V8 heap in use ${fmt(b.daemon_heap_used_idle_mib)} MiB)`,
      samples: 1,
      median: b.daemon_rss_idle_500_channels_mib,
      p99: null,
      unit: "MiB",
      baseline: `${fmt(b.subscriber_rss_idle_mib)} MiB: nostr-tools subscriber process`,
      ratio: r3(b.daemon_rss_idle_500_channels_mib / b.subscriber_rss_idle_mib),
      target: `≤ ${IDLE_RSS_MAX_MIB} MiB`,
      met: b.daemon_rss_idle_500_channels_mib <= IDLE_RSS_MAX_MIB,
    });
    const growth = r3(b.daemon_rss_after_events_after_gc_mib - b.daemon_rss_idle_after_gc_mib);
    rows.push({
      figure: "7",
      measure: `where that idle RSS goes: node executable ${fmt(b.daemon_rss_idle_node_binary_mib)}, other files (libc, libstdc++) ${fmt(b.daemon_rss_idle_other_files_mib)}, V8 young generation ${fmt(b.daemon_v8_new_space_idle_mib)}, V8 other spaces ${fmt(b.daemon_v8_other_spaces_idle_mib)} (old ${fmt(b.daemon_v8_old_space_idle_mib)}, code ${fmt(b.daemon_v8_code_space_idle_mib)}, trusted ${fmt(b.daemon_v8_trusted_space_idle_mib)}, large objects ${fmt(b.daemon_v8_large_object_idle_mib)}), native allocations ${fmt(b.daemon_rss_idle_native_mib)} MiB`,
      samples: 1,
      median: b.daemon_rss_idle_500_channels_mib,
      p99: null,
      unit: "MiB",
      baseline: "—",
      ratio: null,
      target: "—",
      met: null,
    });
    rows.push({
      figure: "7",
      measure: `daemon RSS growth after ${b.events} events, both after a full GC (${fmt(b.daemon_rss_growth_mib)} MiB without; heap in use ${fmt(b.daemon_heap_used_idle_mib)} → ${fmt(b.daemon_heap_used_after_mib)} MiB)`,
      samples: 1,
      median: growth,
      p99: null,
      unit: "MiB",
      baseline: `${fmt(r3(b.subscriber_rss_after_mib - b.subscriber_rss_idle_mib))} MiB: nostr-tools subscriber growth (no GC)`,
      ratio: null,
      target: "≤ 10 MB",
      met: growth * 1.048576 <= 10,
    });
  } else {
    rows.push(failed("6", "busy channel", busy.error), failed("7", "daemon RSS", busy.error));
  }

  // 6p — the same burst under thread participation (no #p filter): replies in the agent's thread.
  const part6p = await part("busy-participation", async () => (await import("./busy.js")).benchBusy("participation"));
  seconds["busy-participation"] = part6p.seconds;
  if (part6p.ok) {
    const b = part6p.value;
    raw.busy_participation = b;
    rows.push({
      figure: "6p",
      measure: `busy channel, participation on (no #p): gate decisions/s, ${b.events} replies without a mention in the agent's thread from authors the policy refuses`,
      samples: b.events,
      median: b.gate_decisions_per_s,
      p99: null,
      unit: "/s",
      baseline: `${fmt(Number(b.relay_delivered_per_s))}/s: relay pace at a nostr-tools subscriber`,
      ratio: b.decisions_vs_relay_pace,
      target: "keeps pace (≥ 0.95×)",
      met: b.decisions_vs_relay_pace >= 0.95,
    });
    rows.push({
      figure: "6p",
      measure: "busy channel, participation on: signature checks by the daemon",
      samples: b.events,
      median: b.daemon_signature_checks,
      p99: null,
      unit: "checks",
      baseline: `${fmt(Number(b.subscriber_signature_checks))}: nostr-tools verifies every event`,
      ratio: r3(b.daemon_signature_checks / b.subscriber_signature_checks),
      target: "only events the bridge acts on: none (refused continuations are never answered)",
      met: b.daemon_signature_checks === 0,
    });
  } else {
    rows.push(failed("6p", "busy channel, participation on", part6p.error));
  }

  // 7b — 10,000 mentions through the gate and the queue: heap growth against the events' own heap.
  const burst = await part("burst", async () => (await import("./burst.js")).benchBurst());
  seconds.burst = burst.seconds;
  if (burst.ok) {
    const b = burst.value;
    raw.burst = b;
    const ratio = b.heap_growth_mib / b.events_heap_mib;
    rows.push({
      figure: "7b",
      measure: `gate and queue: V8 heap growth over a burst of ${b.mentions} mentions (${b.queued} queued, ${b.refused} refused), both after a full GC`,
      samples: 1,
      median: b.heap_growth_mib,
      p99: null,
      unit: "MiB",
      baseline: `${fmt(b.events_heap_mib)} MiB: the same ${b.mentions} events kept parsed`,
      ratio: r3(ratio),
      target: `≤ ${BURST_HEAP_MAX}× (keeping every refused event: about 0.65×)`,
      met: ratio <= BURST_HEAP_MAX,
    });
  } else {
    rows.push(failed("7b", "burst memory", burst.error));
  }

  // 7h — the hostile relay's flood: the daemon's RSS growth against the flood's own size.
  const hostile = await part("hostile", async () => (await import("./hostile.js")).benchHostile());
  seconds.hostile = hostile.seconds;
  if (hostile.ok) {
    const h = hostile.value;
    raw.hostile = h;
    const ratio = h.rss_growth_mib / h.flood_mib;
    rows.push({
      figure: "7h",
      measure: `daemon RSS growth after a hostile relay's ${h.frames} malformed frames and forged events, both after a full GC (${fmt(h.rss_before_mib)} → ${fmt(h.rss_after_mib)} MiB)`,
      samples: 1,
      median: h.rss_growth_mib,
      p99: null,
      unit: "MiB",
      baseline: `${fmt(h.flood_mib)} MiB: the flood's frames`,
      ratio: r3(ratio),
      target: `≤ ${HOSTILE_RSS_MAX}× (keeping the frames: about 2.2×)`,
      met: ratio <= HOSTILE_RSS_MAX,
    });
  } else {
    rows.push(failed("7h", "hostile relay memory", hostile.error));
  }

  // 8.
  const dev = await part("devrelay", async () => (await import("./devrelay.js")).benchDevRelay());
  seconds.devrelay = dev.seconds;
  if (dev.ok) {
    const d = dev.value as Raw;
    raw.devrelay = d;
    rows.push({
      figure: "8",
      measure: "dev relay: events accepted (OK) per second",
      samples: d.devrelay_events!,
      median: d.devrelay_accepted_per_s!,
      p99: null,
      unit: "/s",
      baseline: `${fmt(Number(d.ws_echo_frames_per_s))}/s: bare ws echo`,
      ratio: d.devrelay_accepted_vs_echo!,
      target: "—",
      met: null,
    });
    rows.push({
      figure: "8",
      measure: "dev relay: events delivered to a subscriber per second",
      samples: d.devrelay_events!,
      median: d.devrelay_delivered_per_s!,
      p99: null,
      unit: "/s",
      baseline: `${fmt(Number(d.ws_echo_frames_per_s))}/s: bare ws echo`,
      ratio: d.devrelay_delivered_vs_echo!,
      target: "—",
      met: null,
    });
  } else {
    rows.push(failed("8", "dev relay throughput", dev.error));
  }

  // S1, S2 — an agent told to flood: splitting is linear; another channel's intake is not held up.
  const flood = await part("flood", async () => (await import("./flood.js")).benchFlood());
  seconds.flood = flood.seconds;
  if (flood.ok) {
    const f = flood.value;
    raw.flood = {
      split16: f.split16.map(r3),
      split1x16: f.split1x16.map(r3),
      intake_quiet: f.intakeQuiet.map(r3),
      intake_flood: f.intakeFlood.map(r3),
    };
    const s16 = pct(f.split16, 50);
    const s1 = pct(f.split1x16, 50);
    rows.push({
      figure: "S1",
      measure: "split a 16 MiB message into relay-sized parts",
      samples: f.split16.length,
      median: r3(s16),
      p99: r3(pct(f.split16, 99)),
      unit: "ms",
      baseline: `${fmt(r3(s1))} ms: sixteen 1 MiB messages`,
      ratio: r3(s16 / s1),
      target: "≤ 1.5× (linear in the size)",
      met: s16 / s1 <= 1.5,
    });
    const fq = pct(f.intakeQuiet, 50);
    const ff = pct(f.intakeFlood, 50);
    rows.push({
      figure: "S2",
      measure: "another channel's mention: publish → gate.accepted while a turn posts 20 × 1 MiB",
      samples: f.intakeFlood.length,
      median: r3(ff),
      p99: r3(pct(f.intakeFlood, 99)),
      unit: "ms",
      baseline: `${fmt(r3(fq))} ms: no other turn running`,
      ratio: r3(ff / fq),
      target: "≤ 3× quiet",
      met: ff / fq <= 3,
    });
  } else {
    rows.push(failed("S1", "split a 16 MiB message", flood.error), failed("S2", "intake while a turn floods", flood.error));
  }

  // 9 — the agent sandbox's start-up cost.
  const sandbox = await part("sandbox", async () => (await import("./sandbox.js")).benchSandbox());
  seconds.sandbox = sandbox.seconds;
  if (sandbox.ok) {
    const sb = sandbox.value;
    raw.sandbox = { sandboxed: sb.sandboxed.map(r3), unsandboxed: sb.plain.map(r3) };
    const sm = pct(sb.sandboxed, 50);
    const pm = pct(sb.plain, 50);
    rows.push({
      figure: "9",
      measure: "agent cold start (acquire → session ready, demo agent) in the bubblewrap sandbox",
      samples: sb.sandboxed.length,
      median: r3(sm),
      p99: r3(pct(sb.sandboxed, 99)),
      unit: "ms",
      baseline: `${fmt(Number(r3(pm)))} ms: same spawn unsandboxed (p99 ${fmt(Number(r3(pct(sb.plain, 99))))})`,
      ratio: r3(sm / pm),
      target: "≤ 1.2×",
      met: sm / pm <= 1.2,
    });
  } else {
    rows.push(failed("9", "agent cold start in the sandbox", sandbox.error));
  }

  // 1, 2 — last: the longest part.
  const proxy = await part("proxy", async () => {
    // Optional until its author commits it: a missing file is a row, not a crash.
    const spec = "./proxy.js"; // a variable: type-checking must not require the file
    const mod = (await import(spec).catch(() => undefined)) as { benchProxy?: () => Promise<Raw> } | undefined;
    if (!mod?.benchProxy) throw new Error("bench/proxy.ts (benchProxy) is not available");
    return mod.benchProxy();
  });
  seconds.proxy = proxy.seconds;
  if (proxy.ok) {
    const p = proxy.value;
    raw.proxy = p;
    rows.push({
      figure: "1",
      measure: "proxy overhead: tools/call echo through mcp-proxy",
      samples: p.calls!,
      median: p.proxy_median_ms!,
      p99: p.proxy_p99_ms!,
      unit: "ms",
      baseline: `${fmt(Number(p.direct_median_ms))} ms: direct to server-everything (p99 ${fmt(Number(p.direct_p99_ms))})`,
      ratio: p.proxy_vs_direct_median!,
      target: "≤ 1.5× direct",
      met: p.proxy_vs_direct_median! <= 1.5,
    });
    rows.push({
      figure: "1",
      measure: "floor: tools/call through a byte-copying process",
      samples: p.calls!,
      median: p.copier_median_ms!,
      p99: p.copier_p99_ms!,
      unit: "ms",
      baseline: `${fmt(Number(p.direct_median_ms))} ms: direct`,
      ratio: p.copier_vs_direct_median!,
      target: "—",
      met: null,
    });
  } else {
    rows.push(failed("1", "proxy overhead", proxy.error));
  }

  // 12 — the MCP slot over HTTP against the stdio proxy and the floors, same run.
  const http = await part("mcp-http", async () => (await import("./mcp-http.js")).benchMcpHttp());
  seconds["mcp-http"] = http.seconds;
  if (http.ok) {
    const h = http.value;
    raw["mcp-http"] = h;
    const med = (xs: number[]) => r3(pct(xs, 50));
    const p99 = (xs: number[]) => r3(pct(xs, 99));
    const stdio = med(h.proxy_ms);
    const slot = med(h.http_ms);
    const floor = med(h.http_floor_ms);
    rows.push({
      figure: "12",
      measure: "MCP slot over HTTP: tools/call echo through the daemon's endpoint (Streamable HTTP, the SDK's client)",
      samples: h.http_ms.length,
      median: slot,
      p99: p99(h.http_ms),
      unit: "ms",
      baseline: `${fmt(floor)} ms: the HTTP floor, the same client against a server that answers at once over SSE (p99 ${fmt(p99(h.http_floor_ms))})`,
      ratio: r3(slot / floor),
      target: `≤ ${HTTP_SLOT_FLOOR_MAX}× the HTTP floor`,
      met: slot <= HTTP_SLOT_FLOOR_MAX * floor,
    });
    rows.push({
      figure: "12",
      measure:
        "MCP slot over HTTP against the forwarding floor: a server that hands each call to the same server over a pipe and answers one JSON body, no checks",
      samples: h.http_ms.length,
      median: slot,
      p99: p99(h.http_ms),
      unit: "ms",
      baseline: `${fmt(med(h.http_forward_ms))} ms: the forwarding floor (p99 ${fmt(p99(h.http_forward_ms))})`,
      ratio: r3(slot / med(h.http_forward_ms)),
      target: "—",
      met: null,
    });
    rows.push({
      figure: "12",
      measure: "MCP slot over HTTP against the stdio proxy",
      samples: h.http_ms.length,
      median: slot,
      p99: p99(h.http_ms),
      unit: "ms",
      baseline: `${fmt(stdio)} ms: the stdio proxy, mcp-proxy (p99 ${fmt(p99(h.proxy_ms))})`,
      ratio: r3(slot / stdio),
      target: "—",
      met: null,
    });
    rows.push({
      figure: "12",
      measure: "floor of a JSON answer: the same client against a server that answers at once with one JSON body",
      samples: h.http_floor_json_ms.length,
      median: med(h.http_floor_json_ms),
      p99: p99(h.http_floor_json_ms),
      unit: "ms",
      baseline: `${fmt(floor)} ms: the HTTP floor (SSE)`,
      ratio: r3(med(h.http_floor_json_ms) / floor),
      target: "—",
      met: null,
    });
    rows.push({
      figure: "12",
      measure: "stdio proxy: tools/call echo through mcp-proxy, this part's run",
      samples: h.proxy_ms.length,
      median: stdio,
      p99: p99(h.proxy_ms),
      unit: "ms",
      baseline: `${fmt(med(h.copier_ms))} ms: a byte-copying process (direct ${fmt(med(h.direct_ms))} ms)`,
      ratio: r3(stdio / med(h.copier_ms)),
      target: "—",
      met: null,
    });
    const perHttp = r3((h.http_pss_after_kib - h.http_pss_base_kib) / h.sessions / 1024);
    const perStdio = r3(h.stdio_pss_kib.reduce((a, b) => a + b, 0) / h.stdio_pss_kib.length / 1024);
    rows.push({
      figure: "12",
      measure: `per-session memory over HTTP: PSS the daemon grows by per session (${h.sessions} sessions, one MCP server each, after full GCs)`,
      samples: h.sessions,
      median: perHttp,
      p99: null,
      unit: "MiB",
      baseline: `${fmt(perStdio)} MiB: one mcp-proxy process's PSS per session`,
      ratio: r3(perHttp / perStdio),
      target: "≤ 2 MiB",
      met: perHttp <= 2,
    });
  } else {
    rows.push(failed("12", "MCP slot over HTTP", http.error));
  }

  // 2 — merged hooks, gates answering in 5 ms: N gates through the proxy against one gate
  // through the proxy (a serial fan-out would cost about N×); one gate through the proxy
  // against one gate called directly.
  const hooks = await part("hooks", async () => (await import("./hooks.js")).benchHooks());
  seconds.hooks = hooks.seconds;
  if (hooks.ok) {
    const h = hooks.value;
    const direct = pct(h.direct, 50);
    const one = pct(h.proxied["1"]!, 50);
    raw.hooks = {
      gate_ms: h.gate_ms,
      deadline_ms: h.deadline_ms,
      direct_median: r3(direct),
      proxied_median: Object.fromEntries(Object.entries(h.proxied).map(([n, xs]) => [n, r3(pct(xs, 50))])),
      hung: h.hung.map(r3),
    };
    for (const [n, xs] of Object.entries(h.proxied)) {
      const m = pct(xs, 50);
      const single = n === "1";
      rows.push({
        figure: "2",
        measure: `hook fan-out: merged _Stop over ${n} gate${single ? "" : "s"} answering in ${h.gate_ms} ms`,
        samples: xs.length,
        median: r3(m),
        p99: r3(pct(xs, 99)),
        unit: "ms",
        baseline: single ? `${fmt(direct)} ms: one gate called directly` : `${fmt(one)} ms: one gate through the proxy`,
        ratio: r3(m / (single ? direct : one)),
        target: single ? "—" : `≤ ${HOOKS_FANOUT_MAX}× (a serial fan-out: about ${n}×)`,
        met: single ? null : m / one <= HOOKS_FANOUT_MAX,
      });
    }
    const hm = pct(h.hung, 50);
    rows.push({
      figure: "2",
      measure: "hook fan-out: merged _Stop with one gate hung (3 live), max",
      samples: h.hung.length,
      median: r3(hm),
      p99: r3(Math.max(...h.hung)),
      unit: "ms",
      baseline: `${h.deadline_ms} ms: hook_deadline`,
      ratio: r3(Math.max(...h.hung) / h.deadline_ms),
      target: "max ≤ deadline + 50 ms",
      met: Math.max(...h.hung) <= h.deadline_ms + 50,
    });
  } else {
    rows.push(failed("2", "hook fan-out", hooks.error));
  }

  // 2g — gates on every tool call: a tools/call with 1 and 5 pre_tool gates against none.
  const preTool = await part("pre-tool", async () => (await import("./pre-tool.js")).benchPreTool());
  seconds["pre-tool"] = preTool.seconds;
  if (preTool.ok) {
    const summary = (calls: Record<string, number[]>) =>
      Object.fromEntries(Object.entries(calls).map(([n, xs]) => [n, { n: xs.length, median: r3(pct(xs, 50)), p99: r3(pct(xs, 99)) }]));
    raw["pre-tool"] = { stdio: summary(preTool.value.stdio), http: summary(preTool.value.http) };
    // Each transport's gated calls against its own ungated call: the targets are per slot.
    for (const [c, measure, baseline] of [
      [
        preTool.value.stdio,
        (n: string) => `pre-tool gates over stdio: ${n} gate${n === "1" ? "" : "s"} answering at once, tools/call through mcp-proxy`,
        "the same call through mcp-proxy, no gate",
      ],
      [
        preTool.value.http,
        (n: string) =>
          `pre-tool gates over HTTP: ${n} gate${n === "1" ? "" : "s"} answering at once, tools/call through the daemon's endpoint (Streamable HTTP)`,
        "the same call over HTTP, no gate",
      ],
    ] as const) {
      const none = pct(c["0"]!, 50);
      for (const [n, max] of [
        ["1", PRE_TOOL_ONE_MAX],
        ["5", PRE_TOOL_FIVE_MAX],
      ] as const) {
        const m = pct(c[n]!, 50);
        rows.push({
          figure: "2g",
          measure: measure(n),
          samples: c[n]!.length,
          median: r3(m),
          p99: r3(pct(c[n]!, 99)),
          unit: "ms",
          baseline: `${fmt(Number(r3(none)))} ms: ${baseline} (p99 ${fmt(Number(r3(pct(c["0"]!, 99))))})`,
          ratio: r3(m / none),
          target: `≤ ${max}×`,
          met: m / none <= max,
        });
      }
    }
  } else {
    rows.push(failed("2g", "tools/call with pre_tool gates", preTool.error));
  }

  // 10 — a message arriving mid-turn: publish → the agent has it, steer vs queue.
  const midTurn = await part("midturn", async () => (await import("./midturn.js")).benchMidTurn());
  seconds.midturn = midTurn.seconds;
  if (midTurn.ok) {
    const m = midTurn.value;
    raw.midturn = m;
    const q = pct(m.queue, 50);
    const base = `${fmt(Number(r3(q)))} ms: queue, same ${m.turn_ms} ms scripted turn (p99 ${fmt(Number(r3(pct(m.queue, 99))))})`;
    for (const [label, xs] of [
      ["steer, native (_session/steering)", m.native],
      ["steer, cancel-and-merge", m.merge],
    ] as const) {
      const med = pct(xs, 50);
      rows.push({
        figure: "10",
        measure: `mid-turn message: publish → agent has it, ${label}, sent ${m.send_after_ms} ms into the turn`,
        samples: xs.length,
        median: r3(med),
        p99: r3(pct(xs, 99)),
        unit: "ms",
        baseline: base,
        ratio: r3(med / q),
        target: "< queue",
        met: med < q,
      });
    }
  } else {
    rows.push(failed("10", "mid-turn message latency", midTurn.error));
  }

  // 11 — fleet mode on PostgreSQL.
  const fleet = await part("fleet", async () => (await import("./fleet.js")).benchFleet());
  seconds.fleet = fleet.seconds;
  if (fleet.ok) {
    const f = fleet.value;
    raw.fleet = { ...f, accept_ms: { sqlite_median: r3(pct(f.accept_ms.sqlite, 50)), postgres_median: r3(pct(f.accept_ms.postgres, 50)) } };
    const one = f.per_minute["1"]!;
    for (const n of ["2", "3"]) {
      const scale = f.scaling[n]!;
      rows.push({
        figure: "11",
        measure: `fleet: mentions answered per minute with ${n} daemons (${f.mentions} mentions, ${f.think_ms} ms think, max_concurrent ${f.max_concurrent} each)`,
        samples: f.mentions,
        median: f.per_minute[n]!,
        p99: null,
        unit: "/min",
        baseline: `${fmt(one)}/min: 1 daemon`,
        ratio: scale,
        target: `≥ ${0.75 * Number(n)}× (0.75 per daemon)`,
        met: scale >= 0.75 * Number(n),
      });
    }
    rows.push({
      figure: "11",
      measure: "fleet: SIGKILL of a daemon running a turn → a survivor takes its scope over",
      samples: 1,
      median: f.takeover_ms,
      p99: null,
      unit: "ms",
      baseline: `${fmt(f.lease_ms)} ms: the lease period`,
      ratio: r3(f.takeover_ms / f.lease_ms),
      target: "≤ lease + 2 s",
      met: f.takeover_ms <= f.lease_ms + 2000,
    });
    const cross = f.cancel_ms.fleet.filter((x) => x.cross).map((x) => x.ms);
    const single = pct(
      f.cancel_ms.single.map((x) => x.ms),
      50,
    );
    const fleetCancels = f.cancel_ms.fleet.map((x) => x.ms);
    const worst = Math.max(...fleetCancels);
    rows.push({
      figure: "11",
      measure: `fleet: !cancel → the running turn ends cancelled, 2 daemons (${cross.length} of ${fleetCancels.length} executed by the other daemon), max`,
      samples: fleetCancels.length,
      median: r3(pct(fleetCancels, 50)),
      p99: worst,
      unit: "ms",
      baseline: `${fmt(single)} ms: one daemon`,
      ratio: r3(pct(fleetCancels, 50) / single),
      target: `max ≤ ${CANCEL_MAX_MS / 1000} s (docs/fleet.md)`,
      met: worst <= CANCEL_MAX_MS,
    });
    const pg = pct(f.accept_ms.postgres, 50);
    const sq = pct(f.accept_ms.sqlite, 50);
    rows.push({
      figure: "11",
      measure: "fleet: store cost per accepted mention, PostgreSQL (loopback)",
      samples: f.accept_ms.postgres.length,
      median: r3(pg),
      p99: r3(pct(f.accept_ms.postgres, 99)),
      unit: "ms",
      baseline: `${fmt(r3(sq))} ms: SQLite (WAL, synchronous NORMAL)`,
      ratio: r3(pg / sq),
      target: "—",
      met: null,
    });
  } else {
    rows.push(failed("11", "fleet mode", fleet.error));
  }

  // 12 — an attached image's download, against a plain GET of the same bytes.
  const att = await part("attachments", async () => (await import("./attachments.js")).benchAttachments());
  seconds.attachments = att.seconds;
  if (att.ok) {
    const a = att.value;
    const ours = pct(a.fetcher, 50);
    const plain = pct(a.plain, 50);
    raw.attachments = { fetcher: a.fetcher.map(r3), plain: a.plain.map(r3), bytes: a.bytes };
    rows.push({
      figure: "13",
      measure: `attachment: a ${Math.round(a.bytes / 1024)} KiB image from the relay's media store through the bridge's downloader (auth signed, host policy, size cap, sha256 check)`,
      samples: a.fetcher.length,
      median: r3(ours),
      p99: r3(pct(a.fetcher, 99)),
      unit: "ms",
      baseline: `${fmt(Number(r3(plain)))} ms: plain HTTP GET of the same bytes`,
      ratio: r3(ours / plain),
      target: "≤ 1.5×",
      met: ours / plain <= 1.5,
    });
  } else {
    rows.push(failed("13", "attachment download", att.error));
  }

  // 14 — a team in one daemon: idle RSS with 1, 3, 10 identities vs as many daemons.
  const team = await part("team", async () => (await import("./team.js")).benchTeam());
  seconds.team = team.seconds;
  if (team.ok) {
    const t = team.value;
    raw.team = t;
    for (const n of [1, 3, 10])
      rows.push({
        figure: "14",
        measure: `team: idle RSS of one daemon running ${n} identit${n === 1 ? "y" : "ies"}, each in 500 channels`,
        samples: 1,
        median: r3(t.team[n]!),
        p99: null,
        unit: "MiB",
        baseline: `${fmt(Number(r3(t.separate[n]!)))} MiB: ${n} daemon${n === 1 ? "" : "s"} of one identity each, added up`,
        ratio: r3(t.team[n]! / t.separate[n]!),
        target: n === 1 ? "≤ 1.1×" : "< 1×",
        met: n === 1 ? t.team[n]! / t.separate[n]! <= 1.1 : t.team[n]! < t.separate[n]!,
      });
    const added = (t.team[10]! - t.team[1]!) / 9;
    const addedSeparate = (t.separate[10]! - t.separate[1]!) / 9;
    rows.push({
      figure: "14",
      measure: "team: RSS each identity adds to one daemon (10 identities against 1, per identity)",
      samples: 1,
      median: r3(added),
      p99: null,
      unit: "MiB",
      baseline: `${fmt(Number(r3(addedSeparate)))} MiB: each daemon added`,
      ratio: r3(added / addedSeparate),
      target: `≤ ${TEAM_IDENTITY_MAX_MIB} MiB`,
      met: added <= TEAM_IDENTITY_MAX_MIB,
    });
  } else {
    rows.push(failed("14", "team in one daemon", team.error));
  }

  // 15 — the records Buzz Desktop reads, at start.
  const desktop = await part("desktop", async () => (await import("./desktop.js")).benchDesktop());
  seconds.desktop = desktop.seconds;
  if (desktop.ok) {
    raw.desktop = desktop.value;
    for (const [n, d] of Object.entries(desktop.value))
      rows.push({
        figure: "15",
        measure: `Desktop records: frames at start for profile, directory entry and seats, in ${n} channel${n === "1" ? "" : "s"} (${d.with} frames in all)`,
        samples: 1,
        median: d.extra,
        p99: null,
        unit: "frames",
        baseline: `${d.without} frames: the same start without them`,
        ratio: d.without ? r3(d.with / d.without) : null,
        target: "≤ 3 extra frames",
        met: d.extra <= 3,
      });
  } else {
    rows.push(failed("15", "Desktop records at start", desktop.error));
  }

  // 16 — a refused key against a working one, same agent.
  const provider = await part("provider", async () => (await import("./provider.js")).benchProvider());
  seconds.provider = provider.seconds;
  if (provider.ok) {
    const pv = provider.value;
    raw.provider = { refused: pv.refused.map(r3), working: pv.working.map(r3) };
    const rm = pct(pv.refused, 50);
    const wm = pct(pv.working, 50);
    rows.push({
      figure: "16",
      measure: "a refused key: mention → the thread's notice (Claude through its preset, the provider answering 401)",
      samples: pv.refused.length,
      median: r3(rm),
      p99: r3(pct(pv.refused, 99)),
      unit: "ms",
      baseline: `${fmt(Number(r3(wm)))} ms: mention → reply with a working key, same agent`,
      ratio: r3(rm / wm),
      target: "≤ 2×",
      met: rm / wm <= 2,
    });
  } else {
    rows.push(failed("16", "a refused key: mention → notice", provider.error));
  }

  rows.sort((a, b) => Number.parseFloat(a.figure) - Number.parseFloat(b.figure) || a.figure.localeCompare(b.figure));
  const total = r3((Date.now() - started) / 1000);
  const results = {
    command: "npm run bench",
    date: new Date(started).toISOString(),
    node: process.version,
    cpus: cpus().length,
    load_average_at_start: r3(load0),
    duration_s: total,
    part_seconds: seconds,
    rows,
    raw,
  };
  // BENCH_RESULTS: elsewhere (bench/compare.ts), so a partial run leaves the full run's file alone.
  const out = process.env.BENCH_RESULTS ?? fileURLToPath(new URL("./results.json", import.meta.url));
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(markdownTable(rows));
  console.log(
    `\n${rows.length} rows in ${total.toFixed(0)} s on ${cpus().length} CPUs (load ${load0.toFixed(1)} at start), node ${process.version}; written to ${out}`,
  );
}

const fmt = (x: number | null) => (x === null ? "—" : Math.abs(x) >= 100 ? String(Math.round(x)) : String(Math.round(x * 100) / 100));

/** The one table: Markdown, so bench/README.md can quote it as printed. */
export function markdownTable(rows: Row[]): string {
  const head = "| # | figure | samples | median | p99 | baseline (same run) | ratio | target | met |";
  const sep = "|---|---|---:|---:|---:|---|---:|---|:---:|";
  const body = rows.map(
    (r) =>
      `| ${r.figure} | ${r.measure} | ${r.samples ?? "—"} | ${fmt(r.median)}${r.median === null ? "" : ` ${r.unit}`} | ${r.p99 === null ? "—" : `${fmt(r.p99)} ${r.unit}`} | ${r.baseline || "—"} | ${r.ratio === null ? "—" : `${fmt(r.ratio)}×`} | ${r.target || "—"} | ${r.met === null ? "—" : r.met ? "yes" : "no"} |`,
  );
  return [head, sep, ...body].join("\n");
}

runIfMain(import.meta.url, main, () => undefined);
