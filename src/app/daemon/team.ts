/**
 * Several agents in one daemon (`agents:`, docs/configuration.md "Several agents in one
 * daemon"). Each agent is a {@link Daemon} of its own — its relay connection authenticating
 * as itself (quotas are per key), its state in `state_dir/agents/<id>`, its agent processes,
 * sandbox and `agent.max_concurrent`, its log lines with `"agent":"<id>"` — and the team
 * holds what the process has once: the `state_dir` lock, the HTTP endpoint (every agent's
 * metrics with an `agent` label, readiness and status over all), the embedded development
 * relay, the signals. An owner's `!shutdown` stops that agent alone; the process ends on a
 * signal or with its last agent. A reload starts agents newly listed, stops those removed
 * and reloads the rest.
 */
import { AggregatorRegistry, collectDefaultMetrics, Registry, type MetricObjectWithValues, type MetricValue } from "prom-client";
import type { Logger } from "../../base/log.js";
import { loadTeam, type LoadedConfig, type LoadedTeam } from "../../config/load.js";
import type { DevRelay } from "../../devrelay/index.js";
import { startHttp, type HttpHandle, type ReadyReport } from "../http/http.js";
import { Metrics } from "../http/metrics.js";
import { renderTeamStatusPage, statusJson, type StatusSnapshot } from "../http/status-page.js";
import { Daemon, type SharedSlots } from "./daemon.js";
import { prepareStateDir } from "./preflight.js";
import { StateLock } from "./state-lock.js";
import { adoptSingleAgentState } from "./team-state.js";

export interface TeamOptions {
  team: LoadedTeam;
  logger: Logger;
  configFile: string;
}

interface Member {
  id: string;
  pubkey: string;
  daemon: Daemon;
  metrics: Metrics;
}

export class Team {
  private readonly members = new Map<string, Member>();
  private lock?: StateLock;
  private http?: HttpHandle;
  private devRelay?: DevRelay;
  private readonly processMetrics = new Registry();
  private stopping = false;
  /**
   * Agents that stopped of their own (`!shutdown`, another daemon of the identity running):
   * as a daemon of one agent would, they stay stopped until the process restarts; a reload
   * that still lists them does not start them again (one that drops them forgets this).
   */
  private readonly stoppedOfTheirOwn = new Map<string, string>();
  /** `team.max_concurrent`: the turns all agents run at once (read at start). */
  private readonly slots?: SharedSlots;
  private resolveEnded!: (why: string) => void;
  /** Resolves when the last agent has stopped of its own (`!shutdown`, another daemon of its identity). */
  readonly ended = new Promise<string>((r) => (this.resolveEnded = r));

  constructor(private readonly o: TeamOptions) {
    collectDefaultMetrics({ register: this.processMetrics });
    const cap = o.team.members[0]!.config.team?.max_concurrent;
    if (cap !== undefined) {
      let running = 0;
      this.slots = {
        take: () => running < cap && ++running > 0,
        give: (ended) => {
          running--;
          // A slot freed by one agent's turn may start another agent's: each asks its queue again.
          if (ended) setImmediate(() => this.pumpAll());
        },
      };
    }
  }

  private pumpAll(): void {
    for (const m of this.members.values()) m.daemon.pump();
  }

  /** The running agents' ids, in the config's order. */
  get ids(): string[] {
    return [...this.members.keys()];
  }

  daemon(id: string): Daemon | undefined {
    return this.members.get(id)?.daemon;
  }

  get httpUrl(): string | undefined {
    return this.http?.url;
  }

  async start(): Promise<void> {
    const { team, logger: log } = this.o;
    for (const w of prepareStateDir(team.stateDir)) log.warn({ evt: "state.permissions" }, w);
    // One daemon per state_dir, whether it runs one agent or a team.
    this.lock = StateLock.acquire(team.stateDir);
    adoptSingleAgentState(team, log);
    const first = team.members[0]!.config;
    if (team.members.some((m) => m.config.relay.url === "embedded")) {
      const { startDevRelay } = await import("../../devrelay/index.js");
      this.devRelay = await startDevRelay({ port: 0, seed: first.relay.seed });
      log.info({ evt: "relay.embedded", url: this.devRelay.url, channels: this.devRelay.seeded }, "embedded development relay started");
    }
    if (first.http)
      this.http = await startHttp({
        listen: first.http.listen,
        allowHosts: first.http.allow_hosts,
        metrics: { contentType: this.processMetrics.contentType, text: () => this.exposition() },
        readiness: () => this.readiness(),
        status: () => renderTeamStatusPage(this.snapshots()),
        statusJson: () => ({ agents: this.snapshots().map(({ id, snapshot }) => ({ id, ...(statusJson(snapshot) as object) })) }),
        logger: log,
      });
    for (const m of team.members) await this.add(m);
    log.info({ evt: "team.started", agents: this.ids, http: this.http?.url }, `running ${this.members.size} agents`);
  }

  /** Starts one agent; a start that fails stops it again and throws (at start-up, the whole team stops). */
  private async add(loaded: LoadedConfig): Promise<void> {
    const id = loaded.team!.id;
    const metrics = new Metrics({ defaultMetrics: false });
    const daemon = new Daemon({
      loaded,
      logger: this.o.logger.child({ agent: id }),
      configFile: this.o.configFile,
      metrics,
      devRelay: this.devRelay,
      // The team serves HTTP for all its agents.
      ownHttp: false,
      sharedSlots: this.slots,
      teammates: () => [...this.members.values()].map((m) => m.pubkey).filter((pk) => pk !== loaded.pubkey),
    });
    this.members.set(id, { id, pubkey: loaded.pubkey, daemon, metrics });
    try {
      await daemon.start();
    } catch (err) {
      this.members.delete(id);
      await daemon.stop().catch(() => undefined);
      throw err;
    }
    void daemon.shutdownRequested.then(async (why) => {
      if (this.stopping || this.members.get(id)?.daemon !== daemon) return;
      this.o.logger.info({ evt: "team.agent_removed", agent: id, reason: why }, `agent ${id} stops (${why}); the others go on`);
      this.stoppedOfTheirOwn.set(id, why);
      await this.remove(id);
      if (this.members.size === 0) this.resolveEnded(why);
    });
  }

  private async remove(id: string): Promise<void> {
    const m = this.members.get(id);
    if (!m) return;
    this.members.delete(id);
    await m.daemon.stop();
  }

  /** SIGHUP: the file read once; agents added start, removed stop, the rest reload their part. */
  async reload(): Promise<void> {
    const log = this.o.logger;
    let next: LoadedTeam;
    try {
      next = loadTeam(this.o.configFile);
    } catch (err) {
      // Each agent logs the refusal and records it for its /status, as a daemon of one does.
      for (const m of this.members.values()) await m.daemon.reload(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    const wanted = new Map(next.members.filter((m) => m.team).map((m) => [m.team!.id, m]));
    if (wanted.size === 0) {
      log.error(
        { evt: "config.reload_refused", file: this.o.configFile },
        "the config no longer lists agents: a daemon started as a team stays one; restart it to run a single agent",
      );
      return;
    }
    // One no longer listed is forgotten: listed again by a later reload, it starts.
    for (const id of this.stoppedOfTheirOwn.keys()) if (!wanted.has(id)) this.stoppedOfTheirOwn.delete(id);
    for (const id of this.ids)
      if (!wanted.has(id)) {
        log.info({ evt: "team.agent_removed", agent: id, reason: "reload" }, `agent ${id} is no longer listed: stopping it`);
        await this.remove(id);
      }
    for (const [id, loaded] of wanted) {
      const m = this.members.get(id);
      if (m) {
        await m.daemon.reload(loaded);
        continue;
      }
      const why = this.stoppedOfTheirOwn.get(id);
      if (why) {
        log.info(
          { evt: "team.agent_stays_stopped", agent: id, reason: why },
          `agent ${id} stopped of its own (${why}) and stays stopped until the daemon restarts`,
        );
        continue;
      }
      try {
        await this.add(loaded);
        log.info({ evt: "team.agent_added", agent: id }, `agent ${id} is newly listed: started`);
      } catch (err) {
        log.error(
          { evt: "team.agent_failed", agent: id, err: (err as Error).message },
          `agent ${id} could not start: ${(err as Error).message}`,
        );
      }
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.members.values()].map((m) => m.daemon.stop().catch(() => undefined)));
    this.members.clear();
    await this.http?.close().catch(() => undefined);
    await this.devRelay?.close().catch(() => undefined);
    this.lock?.release();
  }

  abortStart(): void {
    for (const m of this.members.values()) m.daemon.abortStart();
  }

  /** Every agent's series with its `agent` label, and the process's own metrics once. */
  private async exposition(): Promise<string> {
    const labelled: MetricObjectWithValues<MetricValue<string>>[][] = [];
    for (const m of this.members.values()) {
      const metrics = await m.metrics.registry.getMetricsAsJSON();
      labelled.push(
        metrics.map((metric) => ({
          ...metric,
          values: metric.values.map((v) => ({ ...v, labels: { ...v.labels, agent: m.id } })),
        })) as MetricObjectWithValues<MetricValue<string>>[],
      );
    }
    labelled.push((await this.processMetrics.getMetricsAsJSON()) as MetricObjectWithValues<MetricValue<string>>[]);
    return AggregatorRegistry.aggregate(labelled).metrics();
  }

  private readiness(): ReadyReport {
    if (this.members.size === 0) return { checks: [{ name: "agents", ok: false, detail: "no agent is running" }] };
    return {
      checks: [...this.members.values()].flatMap((m) => m.daemon.readiness().checks.map((c) => ({ ...c, name: `${m.id}/${c.name}` }))),
    };
  }

  private snapshots(): { id: string; snapshot: StatusSnapshot }[] {
    return [...this.members.values()].map((m) => ({ id: m.id, snapshot: m.daemon.statusSnapshot() }));
  }
}
