/**
 * What the daemon reports about itself: `/readyz` (relay subscribed, agent circuit closed,
 * state store open), the `/status` page's snapshot (and `/status.json`), and the fleet
 * figures for `/metrics`.
 * Each is gathered from the parts that know it; a part not built yet (start-up, or fleet
 * mode waiting for its database) reads as "not started".
 */
import type { AgentPool } from "../../agent/pool.js";
import type { Config } from "../../config/schema.js";
import { channelSelected, policyFor } from "../../config/schema.js";
import type { QueueBackend } from "../../queue/backend.js";
import type { Scheduler } from "../../queue/scheduler.js";
import type { SqliteStore } from "../../queue/sqlite-store.js";
import type { RelayClient } from "../../relay/client.js";
import type { ChannelDirectory } from "../../buzz/directory.js";
import type { TurnDispatcher } from "../../turn/dispatch.js";
import type { ReadyReport } from "../http/http.js";
import { processParents, treeRss } from "../http/proc-memory.js";
import type { PersonRef, StatusSnapshot } from "../http/status-page.js";
import type { UsageToday } from "./usage-today.js";
import type { RecentTurns } from "./recent-turns.js";
import { neventEncode } from "nostr-tools/nip19";
import { npub } from "../../config/keys.js";
import { PACKAGE_VERSION } from "../../base/version.js";
import { relayInfoRows, workStatusAddress } from "./relay-info.js";

/** Denials the status page lists. */
const RECENT_DENIALS = 20;

/** One denial as the gate made it: the author as a pubkey (hex), turned into a person for the page. */
interface Denial {
  at: number;
  channel?: string;
  author: string;
  reason: string;
}

/** The last denials, newest last. */
export class RecentDenials {
  private readonly list: Denial[] = [];

  add(d: Denial): void {
    this.list.push(d);
    if (this.list.length > RECENT_DENIALS) this.list.shift();
  }

  /** Newest first, as the page shows them. */
  newestFirst(): Denial[] {
    return [...this.list].reverse();
  }
}

/** The last SIGHUP's outcome, as `/status` shows it. */
export type LastReload = NonNullable<StatusSnapshot["reload"]>;

/** The daemon's parts as they stand; any may be missing before start() built it. */
export interface DaemonParts {
  config: Config;
  /** The config file the daemon reads (and re-reads on SIGHUP). */
  configFile: string;
  pubkey: string;
  startedAt: number;
  stopping: boolean;
  /** The relay's url as connected (the embedded relay's own address), else the configured one. */
  relayUrl: string;
  relay?: RelayClient;
  store?: SqliteStore;
  /** The queue's backend, once open (in fleet mode the database may still be awaited). */
  backend?: QueueBackend;
  scheduler?: Scheduler;
  dispatcher?: TurnDispatcher;
  /** Set while intake is paused because the state store cannot be written. */
  intakePaused?: string;
  directory?: ChannelDirectory;
  pool?: AgentPool;
  usage: UsageToday;
  denials: RecentDenials;
  recent: RecentTurns;
  lastReload?: LastReload;
  /** A display name already known for a pubkey (cached profiles; never a relay round trip). */
  nameOf?: (pubkey: string) => string | undefined;
}

// ---- who, what and when: the part of the page that answers "what happened" ----

function person(p: DaemonParts, pubkey: string): PersonRef {
  const name = p.nameOf?.(pubkey);
  return name ? { npub: npub(pubkey), name } : { npub: npub(pubkey) };
}

/** NIP-42 as a person reads it. */
function relayAuth(relay: RelayClient | undefined): string {
  if (!relay) return "not yet";
  if (relay.state === "authenticated" || relay.state === "subscribed") return "accepted";
  return relay.lastAuthError ? `refused: ${relay.lastAuthError}` : "not yet";
}

/** What every snapshot has, whether the daemon is running yet or not. */
function identityPart(
  p: DaemonParts,
): Pick<StatusSnapshot, "generatedAt" | "startedAt" | "version" | "configFile" | "agent" | "owner" | "reload"> {
  const owner = p.config.identity.owner;
  return {
    generatedAt: Date.now(),
    startedAt: p.startedAt,
    version: PACKAGE_VERSION,
    configFile: p.configFile,
    agent: person(p, p.pubkey),
    ...(owner ? { owner: person(p, owner) } : {}),
    ...(p.lastReload ? { reload: p.lastReload } : {}),
  };
}

function recentTurns(p: DaemonParts): StatusSnapshot["recent"] {
  return p.recent.newestFirst().map((t) => ({
    turnId: t.turnId,
    endedAt: t.endedAt,
    seconds: t.seconds,
    channel: t.channel,
    thread: t.thread,
    link: `nostr:${neventEncode({ id: t.thread, relays: [p.relayUrl] })}`,
    askedBy: t.requesters.map((pk) => person(p, pk)),
    status: t.status,
    ...(t.reason ? { reason: t.reason } : {}),
    ...(t.model ? { model: t.model } : {}),
    ...(t.usage ? { usage: t.usage } : {}),
  }));
}

export function statusSnapshot(p: DaemonParts): StatusSnapshot {
  const cfg = p.config;
  if (!p.dispatcher || !p.scheduler || !p.directory || !p.pool) {
    // Fleet mode, still waiting for the database: the page says so instead of failing.
    const state = cfg.state.backend === "postgres" && !p.backend ? "not started (waiting for the fleet's database)" : "not started";
    return {
      ...identityPart(p),
      relay: { url: cfg.relay.url, state, auth: relayAuth(p.relay) },
      channels: [],
      turns: [],
      recent: [],
      denials: [],
      agents: [],
      circuit: "closed",
      usage: p.usage.snapshot(),
    };
  }
  const queued = p.scheduler.depthByChannel();
  const fleet = p.scheduler.fleetStatus();
  const parents = processParents();
  return {
    ...identityPart(p),
    relay: {
      url: p.relayUrl,
      state: p.relay?.state ?? "not started",
      auth: relayAuth(p.relay),
      ...(p.relay ? { info: relayInfoRows(p.relay) } : {}),
    },
    channels: p.directory
      .list()
      .filter((c) => !c.archived && channelSelected(cfg, c.id))
      .map((c) => {
        const policy = policyFor(cfg, c.id);
        return {
          id: c.id,
          name: c.name,
          about: c.about,
          type: c.type,
          respondTo: policy.respond_to,
          onDenied: policy.on_denied,
          queued: queued.get(c.id) ?? 0,
          ...(policy.work_status === "on" ? { workStatus: workStatusAddress(p.pubkey, c.id, p.relayUrl) } : {}),
        };
      }),
    turns: p.dispatcher.runningTurns(),
    recent: recentTurns(p),
    denials: p.denials.newestFirst().map((d) => ({ ...d, author: person(p, d.author) })),
    agents: p.pool.processes().map((a) => ({
      pid: a.pid,
      scope: a.scope,
      spare: a.spare,
      busy: a.session?.busy ?? false,
      model: a.session?.model,
      turns: a.session?.turns ?? 0,
      rssBytes: treeRss(a.pid, parents),
    })),
    circuit: p.pool.circuit.state,
    usage: p.usage.snapshot(),
    held: p.scheduler.heldScopes(),
    ...(fleet ? { fleet } : {}),
  };
}

export function readiness(p: DaemonParts): ReadyReport {
  const state = p.relay?.state;
  const circuit = p.pool?.circuit.state;
  return {
    checks: [
      {
        name: "relay",
        ok: state === "subscribed",
        detail:
          state === "subscribed"
            ? "authenticated and subscribed"
            : `relay connection is ${state ?? "not started"}${p.relay?.lastAuthError ? ` (${p.relay.lastAuthError})` : ""}`,
      },
      {
        name: "agent",
        ok: circuit !== "open",
        detail: circuit === "open" ? "agent circuit breaker open after repeated crashes" : "agent available",
      },
      stateCheck(p),
    ],
  };
}

function stateCheck(p: DaemonParts): ReadyReport["checks"][number] {
  if (p.stopping) return { name: "state", ok: false, detail: "shutting down" };
  if (p.config.state.backend === "postgres" && !p.backend)
    return { name: "state", ok: false, detail: "waiting for the fleet's PostgreSQL database" };
  if (p.intakePaused)
    return { name: "state", ok: false, detail: `the state store cannot be written (${p.intakePaused}): not taking mentions until it can` };
  return {
    name: "state",
    ok: !!p.store,
    detail: p.backend && p.backend !== p.store ? `state store open; fleet database ${p.backend.where}` : "state store open",
  };
}
