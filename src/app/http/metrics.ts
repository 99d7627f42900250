/**
 * The daemon's Prometheus metrics (served on `/metrics` with `http.listen`, docs/operating.md).
 *
 * Every metric lives in this class's own `Registry`, not prom-client's global one, so
 * tests (and a demo running a daemon in-process) can hold several side by side. Callers
 * use the named methods below and never touch prom-client: metric names and label sets
 * stay in one file, and label values stay bounded (reasons, outcomes and statuses come
 * from fixed sets in the code that calls, never from event content).
 *
 * Metrics (all prefixed `buzz_bridge_`):
 *
 * | name | type | labels | meaning |
 * |---|---|---|---|
 * | events_received_total | counter | kind | relay events delivered to the gate, by Nostr kind |
 * | gate_decisions_total | counter | decision, reason | accept / deny / drop / control, with the gate's reason |
 * | queue_depth | gauge | | accepted events stored and not yet finished (all scopes) |
 * | turns_total | counter | outcome | finished turns: answered / failed / cancelled |
 * | turn_duration_seconds | histogram | outcome | wall time of a turn, 1 s … 2 h buckets |
 * | mid_turn_delivery_seconds | histogram | method | a message arriving mid-turn: accepted → given to the agent (native steer or cancel-merge) |
 * | agent_processes | gauge | | agent processes alive (working, idle and warm) |
 * | agent_spawns_total | counter | | agent processes started |
 * | agent_crashes_total | counter | | agent processes that exited without being asked to |
 * | agent_circuit_open | gauge | agent | 1 while the respawn circuit breaker is open |
 * | proxy_hook_fanouts_total | counter | hook, verdict | merged `_Stop` / `_PostCompact` answers a session's proxy gave (asked by the bridge or called by the agent; other hook names count as `other`) |
 * | gate_down_total | counter | gate | a `stop: wait` gate found not running when `_Stop` was due (once per gate and turn) |
 * | proxy_hook_duration_seconds | histogram | hook | time to the merged hook answer (deadline ≈ 2 s) |
 * | relay_reconnects_total | counter | | WebSocket reconnect attempts |
 * | relay_state | gauge | state | 1 for the connection's current state, 0 for the others |
 * | publish_total | counter | kind, status | every event the daemon published (relay/publisher.ts), by Nostr kind and outcome: accepted, duplicate (the relay had it: also a success), refused, timeout, disconnected, dropped (a signal left out while the relay held the identity back) |
 * | relay_frames_total | counter | outcome | the identity's frame quota as this daemon spends it (relay/frame-budget.ts): `sent` (frames and HTTP calls that took a slot), `waited` (of those, the ones that waited for a slot), `signal_dropped` (typing and presence left out for want of room) |
 * | signature_checks_total | counter | result | Schnorr verifications done (valid / invalid): only events acted on |
 * | tokens_total | counter | channel, model, direction | tokens the agent reported per turn (direction in / out) |
 * | cost_total | counter | channel, model, currency | cost the agent reported per turn |
 * | session_rotations_total | counter | reason | sessions ended by the bridge: max_turns, max_tokens, max_turn_requests, owner |
 * | heartbeats_total | counter | outcome, reason | heartbeat ticks: fired, or skipped with why (busy, queued, heartbeat-running, not-listening, not-a-member, other-daemon: another daemon of the fleet fired this period) |
 * | fleet_leases | gauge | | fleet mode only: scopes this daemon holds the lease of |
 * | fleet_queue_depth | gauge | | fleet mode only: mentions waiting for a turn across the fleet (as of the last lease renewal) |
 *
 * Plus prom-client's default process metrics (`process_*`, `nodejs_*`) under their usual
 * names, so stock Node dashboards work unchanged.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { PublishStatus } from "../../relay/outcome.js";

const PREFIX = "buzz_bridge_";

/** What the gate did with an event (docs/architecture.md §3). */
export type GateDecision = "accept" | "amend" | "deny" | "drop" | "control";
/** How a turn ended: every accepted mention ends as one of these (docs/architecture.md §3). */
export type TurnOutcome = "answered" | "failed" | "cancelled";
/** The merged verdict of a hook fan-out: an objection was raised, or nobody objected. */
export type HookVerdict = "allow" | "object";

/**
 * Turn durations span a quick answer (seconds) to `agent.max_turn` (2 h default), so the
 * buckets grow roughly ×2–×3 from 1 s to 2 h.
 */
const TURN_DURATION_BUCKETS = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];

/** Hook fan-outs answer within `mcp.hook_deadline` (2 s default, below the agent's 2.5 s). */
/** A steer lands in milliseconds; a cancel-and-merge waits for the agent to stop (up to `agent.cancel_grace`). */
const MID_TURN_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];

const HOOK_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 2.5, 5];

/**
 * Values read at scrape time from the parts that already count them, so the daemon wires
 * a getter once instead of pushing every change. Each is optional; a pushed value (the
 * methods below) is overwritten by its source on the next scrape.
 */
export interface MetricSources {
  /** Accepted, unfinished events: e.g. the scheduler's `depth()` queued + in flight. */
  queueDepth?: () => number;
  /** Live agent processes. */
  agentProcesses?: () => number;
  /** The relay connection's cumulative reconnect count; the counter advances by the difference. */
  relayReconnects?: () => number;
  /** The relay connection's state name (`connecting`, `authenticated`, `subscribed`, …). */
  relayState?: () => string;
  /** Cumulative signature checks (e.g. `verifyStats` from nostr/verify.ts); the counter advances by the difference. */
  signatureChecks?: () => { verified: number; failed: number };
  /** The frame budget's cumulative counts (relay/frame-budget.ts); the counter advances by the difference. */
  frameBudget?: () => { sent: number; waited: number; signalsDropped: number };
  /** Fleet mode: this daemon's scope leases and the fleet's waiting mentions. Registers the fleet gauges. */
  fleet?: () => { leases: number; queued: number };
}

export interface MetricsOptions {
  /** Collect prom-client's default process metrics (CPU, memory, event loop, GC). Default true. */
  defaultMetrics?: boolean;
}

/**
 * A labelled counter fed from cumulative totals read at scrape time: each series advances by
 * what its total grew since the last read (a lower total, its source started over, counts on
 * from there).
 */
function advance<K extends string>(
  counter: Counter<string>,
  label: string,
  totals: Record<K, number>,
  seen: Record<K, number>,
  names: Record<K, string>,
): void {
  for (const key of Object.keys(names) as K[]) {
    if (totals[key] > seen[key]) counter.inc({ [label]: names[key] }, totals[key] - seen[key]);
    seen[key] = totals[key];
  }
}

export class Metrics {
  /** The registry `/metrics` renders; exposed for tests and for adding process-local metrics. */
  readonly registry = new Registry();

  private readonly eventsReceived: Counter<"kind">;
  private readonly gateDecisions: Counter<"decision" | "reason">;
  private readonly queueDepthGauge: Gauge;
  private readonly turns: Counter<"outcome">;
  private readonly turnDuration: Histogram<"outcome">;
  private readonly midTurnDelivery: Histogram<"method">;
  private readonly agentProcessesGauge: Gauge;
  private readonly agentSpawns: Counter;
  private readonly agentCrashes: Counter;
  private readonly circuitOpen: Gauge<"agent">;
  private readonly hookFanouts: Counter<"hook" | "verdict">;
  private readonly hookDuration: Histogram<"hook">;
  private readonly relayReconnects: Counter;
  private readonly relayStateGauge: Gauge<"state">;
  private readonly publishes: Counter<"kind" | "status">;
  private readonly signatureChecks: Counter<"result">;
  private readonly tokens: Counter<"channel" | "model" | "direction">;
  private readonly cost: Counter<"channel" | "model" | "currency">;
  private readonly rotations: Counter<"reason">;
  private readonly heartbeats: Counter<"outcome" | "reason">;
  private readonly gatesDown: Counter<"gate">;
  private readonly relayFrames: Counter<"outcome">;
  private readonly checksSeen = { verified: 0, failed: 0 };
  private readonly framesSeen = { sent: 0, waited: 0, signalsDropped: 0 };
  private readonly relayStatesSeen = new Set<string>();
  private sources: MetricSources = {};
  private reconnectsSeen = 0;

  constructor(opts: MetricsOptions = {}) {
    const registers = [this.registry];
    this.eventsReceived = new Counter({
      name: `${PREFIX}events_received_total`,
      help: "Relay events delivered to the gate, by Nostr kind.",
      labelNames: ["kind"],
      registers,
    });
    this.gateDecisions = new Counter({
      name: `${PREFIX}gate_decisions_total`,
      help: "Gate decisions (accept, deny, drop, control) by reason.",
      labelNames: ["decision", "reason"],
      registers,
    });
    this.queueDepthGauge = new Gauge({
      name: `${PREFIX}queue_depth`,
      help: "Accepted events stored and not yet finished, over all scopes.",
      registers,
      collect: () => this.read(this.sources.queueDepth, (n) => this.queueDepth(n)),
    });
    this.turns = new Counter({
      name: `${PREFIX}turns_total`,
      help: "Finished turns by outcome (answered, failed, cancelled).",
      labelNames: ["outcome"],
      registers,
    });
    this.turnDuration = new Histogram({
      name: `${PREFIX}turn_duration_seconds`,
      help: "Wall-clock duration of a turn, from pick-up to its result reaction.",
      labelNames: ["outcome"],
      buckets: TURN_DURATION_BUCKETS,
      registers,
    });
    this.midTurnDelivery = new Histogram({
      name: `${PREFIX}mid_turn_delivery_seconds`,
      help: "How long a message that arrived while its scope's turn ran took to reach the agent, by method (native, cancel-merge).",
      labelNames: ["method"],
      buckets: MID_TURN_BUCKETS,
      registers,
    });
    this.agentProcessesGauge = new Gauge({
      name: `${PREFIX}agent_processes`,
      help: "Agent processes alive (working, idle and warm).",
      registers,
      collect: () => this.read(this.sources.agentProcesses, (n) => this.agentProcesses(n)),
    });
    this.agentSpawns = new Counter({
      name: `${PREFIX}agent_spawns_total`,
      help: "Agent processes started.",
      registers,
    });
    this.agentCrashes = new Counter({
      name: `${PREFIX}agent_crashes_total`,
      help: "Agent processes that exited without being asked to.",
      registers,
    });
    this.circuitOpen = new Gauge({
      name: `${PREFIX}agent_circuit_open`,
      help: "1 while the agent respawn circuit breaker is open, else 0.",
      labelNames: ["agent"],
      registers,
    });
    this.hookFanouts = new Counter({
      name: `${PREFIX}proxy_hook_fanouts_total`,
      help: "Proxy hook fan-outs (_Stop, _PostCompact, _PreToolUse: object = the tool call was blocked) by merged verdict.",
      labelNames: ["hook", "verdict"],
      registers,
    });
    this.hookDuration = new Histogram({
      name: `${PREFIX}proxy_hook_duration_seconds`,
      help: "Time from a hook call to the proxy's merged answer.",
      labelNames: ["hook"],
      buckets: HOOK_DURATION_BUCKETS,
      registers,
    });
    this.relayReconnects = new Counter({
      name: `${PREFIX}relay_reconnects_total`,
      help: "Relay WebSocket reconnect attempts.",
      registers,
      collect: () =>
        this.read(this.sources.relayReconnects, (total) => {
          if (total > this.reconnectsSeen) this.relayReconnects.inc(total - this.reconnectsSeen);
          this.reconnectsSeen = total; // lower after a source restarts: count on from there
        }),
    });
    this.relayStateGauge = new Gauge({
      name: `${PREFIX}relay_state`,
      help: "Relay connection state: 1 for the current state, 0 for states seen before.",
      labelNames: ["state"],
      registers,
      collect: () => this.read(this.sources.relayState, (state) => this.relayState(state)),
    });
    this.publishes = new Counter({
      name: `${PREFIX}publish_total`,
      help: "Events published to the relay, by kind and outcome (accepted, duplicate, refused, timeout, disconnected, dropped).",
      labelNames: ["kind", "status"],
      registers,
    });
    this.signatureChecks = new Counter({
      name: `${PREFIX}signature_checks_total`,
      help: "Event signatures verified (result valid or invalid); the gate checks only events it acts on.",
      labelNames: ["result"],
      registers,
      collect: () =>
        this.read(this.sources.signatureChecks, (s) =>
          advance(this.signatureChecks, "result", s, this.checksSeen, { verified: "valid", failed: "invalid" }),
        ),
    });
    this.relayFrames = new Counter({
      name: `${PREFIX}relay_frames_total`,
      help: "The identity's frame quota as this daemon spends it: sent (took a slot), waited (of those, waited for one), signal_dropped (typing or presence left out).",
      labelNames: ["outcome"],
      registers,
      collect: () =>
        this.read(this.sources.frameBudget, (b) =>
          advance(this.relayFrames, "outcome", b, this.framesSeen, { sent: "sent", waited: "waited", signalsDropped: "signal_dropped" }),
        ),
    });
    this.tokens = new Counter({
      name: `${PREFIX}tokens_total`,
      help: "Tokens the agent reported for its turns, by channel, model and direction (in, out).",
      labelNames: ["channel", "model", "direction"],
      registers,
    });
    this.cost = new Counter({
      name: `${PREFIX}cost_total`,
      help: "Cost the agent reported for its turns, by channel, model and currency.",
      labelNames: ["channel", "model", "currency"],
      registers,
    });
    this.rotations = new Counter({
      name: `${PREFIX}session_rotations_total`,
      help: "Agent sessions the bridge ended so the next turn starts fresh, by reason.",
      labelNames: ["reason"],
      registers,
    });
    this.heartbeats = new Counter({
      name: `${PREFIX}heartbeats_total`,
      help: "Heartbeat ticks: fired (the idle agent was prompted) or skipped, with the reason.",
      labelNames: ["outcome", "reason"],
      registers,
    });
    this.gatesDown = new Counter({
      name: `${PREFIX}gate_down_total`,
      help: "stop: wait gates found not running when _Stop was due, once per gate and turn.",
      labelNames: ["gate"],
      registers,
    });
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Registers getters read on every scrape (merged with earlier calls). Use a source or the
   * matching push method for a metric, not both (reconnects would count twice).
   */
  sample(sources: MetricSources): void {
    this.sources = { ...this.sources, ...sources };
    if (sources.fleet && !this.registry.getSingleMetric(`${PREFIX}fleet_leases`)) {
      // Only a fleet has these; a single daemon's /metrics does not show them as zeros.
      const registers = [this.registry];
      const leases = new Gauge({
        name: `${PREFIX}fleet_leases`,
        help: "Scopes this daemon holds the lease of (fleet mode).",
        registers,
        collect: () => this.read(this.sources.fleet, (f) => leases.set(f.leases)),
      });
      const queued = new Gauge({
        name: `${PREFIX}fleet_queue_depth`,
        help: "Mentions waiting for a turn across the fleet, as of the last lease renewal (fleet mode).",
        registers,
        collect: () => this.read(this.sources.fleet, (f) => queued.set(f.queued)),
      });
    }
  }

  /** A failing getter must not break the whole scrape; the metric keeps its last value. */
  private read<T>(source: (() => T) | undefined, apply: (v: T) => void): void {
    if (!source) return;
    try {
      apply(source());
    } catch {
      // keep the previous value
    }
  }

  /** A relay event reached the gate. */
  eventReceived(kind: number): void {
    this.eventsReceived.inc({ kind: String(kind) });
  }

  /** The gate decided; `reason` is the gate's fixed reason code (e.g. `not-allowed`, `own-event`). */
  gateDecision(decision: GateDecision, reason: string): void {
    this.gateDecisions.inc({ decision, reason });
  }

  /** Current number of accepted, unfinished events (set from the store, so it survives restarts). */
  queueDepth(n: number): void {
    this.queueDepthGauge.set(n);
  }

  /** A turn finished after `seconds`. */
  turnEnded(outcome: TurnOutcome, seconds: number): void {
    this.turns.inc({ outcome });
    this.turnDuration.observe({ outcome }, seconds);
  }

  /** A mid-turn message reached the agent `seconds` after it was accepted. */
  midTurnDelivered(method: "native" | "cancel-merge", seconds: number): void {
    this.midTurnDelivery.observe({ method }, seconds);
  }

  /** A `stop: wait` gate (a configured server name) was not running when `_Stop` was due. */
  gateDown(gate: string): void {
    this.gatesDown.inc({ gate });
  }

  /** A heartbeat tick; `reason` is the skip reason ("" when fired). */
  heartbeat(outcome: "fired" | "skipped", reason = ""): void {
    this.heartbeats.inc({ outcome, reason });
  }

  /** Current number of live agent processes. */
  agentProcesses(n: number): void {
    this.agentProcessesGauge.set(n);
  }

  agentSpawned(): void {
    this.agentSpawns.inc();
  }

  agentCrashed(): void {
    this.agentCrashes.inc();
  }

  /** The respawn circuit breaker opened or closed; `agent` names it when there are several. */
  circuitState(open: boolean, agent = "agent"): void {
    this.circuitOpen.set({ agent }, open ? 1 : 0);
  }

  /** One merged hook answer a session's proxy gave: `hook` is `_Stop`, `_PostCompact` or `other`. */
  hookFanout(hook: string, verdict: HookVerdict, seconds: number): void {
    this.hookFanouts.inc({ hook, verdict });
    this.hookDuration.observe({ hook }, seconds);
  }

  /**
   * The relay connection moved to `state` (e.g. `connecting`, `authenticated`,
   * `subscribed`, `disconnected`). Enum-style: the current state reads 1, earlier ones 0,
   * so `buzz_bridge_relay_state{state="subscribed"} == 0` alerts on trouble.
   */
  relayState(state: string): void {
    this.relayStatesSeen.add(state);
    for (const s of this.relayStatesSeen) this.relayStateGauge.set({ state: s }, s === state ? 1 : 0);
  }

  /** A publish of an event of `kind` finished with `status` (relay/outcome.ts). */
  published(kind: number, status: PublishStatus): void {
    this.publishes.inc({ kind: String(kind), status });
  }

  /**
   * A turn's usage as the agent reported it. `channel` is a channel id (bounded by the
   * identity's memberships), `model` the session's model or `unknown`.
   */
  turnUsage(
    channel: string,
    model: string | undefined,
    usage: { inputTokens: number; outputTokens: number; cost?: { amount: number; currency: string } },
  ): void {
    const m = model ?? "unknown";
    if (usage.inputTokens > 0) this.tokens.inc({ channel, model: m, direction: "in" }, usage.inputTokens);
    if (usage.outputTokens > 0) this.tokens.inc({ channel, model: m, direction: "out" }, usage.outputTokens);
    if (usage.cost && usage.cost.amount > 0) this.cost.inc({ channel, model: m, currency: usage.cost.currency }, usage.cost.amount);
  }

  /** The bridge ended an agent session (`reason`: max_turns, max_tokens, max_turn_requests, owner). */
  sessionRotated(reason: string): void {
    this.rotations.inc({ reason });
  }

  /** Content-Type of {@link text}. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
