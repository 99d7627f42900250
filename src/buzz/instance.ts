/**
 * One daemon per identity, across machines (docs/architecture.md §1): each daemon announces
 * itself on the relay with a beacon, an addressable NIP-78 application-data event (kind
 * 30078) signed by the identity, `d` = `buzz-bridge:instance:<instance id>`, re-published
 * every 30 s while it runs and replaced by a "stopped" one when it stops. Its content
 * (instance id, host, pid, start time, fleet) is NIP-44-encrypted to the identity itself:
 * channel members, who may read it on the relay, learn nothing of the host.
 *
 * A beacon is live while its last refresh is less than 90 s old. At start a daemon asks the
 * relay for live beacons of its identity and refuses to start when it finds one of another
 * instance; it publishes its own and asks once more (two daemons starting together both
 * see each other then). While running it watches the identity's beacons: when another
 * instance appears, the one that started later stops answering, and both log
 * `instance.conflict`. Daemons of one fleet (`state.backend: postgres`) carry the fleet's
 * id and recognise each other. The instance id lives in the state directory, so a restart
 * on the same directory is the same instance.
 *
 * Failover: after a graceful stop, another daemon may start at once; after a crash
 * (SIGKILL, a lost machine) once the dead one's beacon is 90 s old (REFRESH_MS × 3), plus
 * the clock difference between the two machines.
 */
import { hostname } from "node:os";
import type { Event, EventTemplate } from "nostr-tools";
import * as nip44 from "nostr-tools/nip44";
import type { Logger } from "../base/log.js";
import { nowSec } from "../base/time.js";
import { tagValue } from "../base/tags.js";
import { KIND } from "../nostr/kinds.js";
import { verifySignature } from "../nostr/verify.js";
import type { RelayClient } from "../relay/client.js";
import { isSuccess } from "../relay/outcome.js";
import type { Publisher } from "../relay/publisher.js";

/** A beacon is re-published this often. */
export const REFRESH_MS = 30_000;
/** A beacon older than this is a dead instance's (three refreshes missed). */
export const STALE_MS = 3 * REFRESH_MS;
const D_PREFIX = "buzz-bridge:instance:";
const SUB_INSTANCE = "instance";
/** How long a stopping daemon waits to say "stopped" on the relay (a daemon on another state dir may start at once then). */
const STOP_NOTE_MS = 5000;

export interface InstanceInfo {
  instance: string;
  host: string;
  pid: number;
  /** Unix seconds. */
  started_at: number;
  /** The fleet's id (state.backend: postgres); daemons of one fleet are not in conflict. */
  fleet?: string;
  state: "running" | "stopped";
}

/** Another live instance of this identity was found at start. */
export class InstanceConflictError extends Error {
  override name = "InstanceConflictError";
  constructor(readonly other: InstanceInfo & { seen_at: number }) {
    super(
      `another buzz-bridge daemon of this identity is running (instance ${other.instance}, host ${other.host}, pid ${other.pid}, ` +
        `last seen ${nowSec() - other.seen_at} s ago): stop it first, or wait until its beacon is ${STALE_MS / 1000} s old after it died; ` +
        "daemons sharing the work run as one fleet (state.backend: postgres)",
    );
  }
}

export interface InstanceBeaconOptions {
  relay: Pick<RelayClient, "query" | "watch">;
  /** The daemon's publisher (relay/publisher.ts): the beacon is published like everything else. */
  publisher: Pick<Publisher, "send">;
  secretKey: Uint8Array;
  pubkey: string;
  /** This daemon's instance id (kept in its state directory). */
  instance: string;
  fleet?: string;
  logger: Logger;
  /** Another instance that started earlier is running: this one must stop answering. */
  onLost(other: InstanceInfo): void;
}

type Seen = InstanceInfo & { seen_at: number };

/**
 * The beacon of `info`, its content sealed with `key`, the identity's NIP-44 conversation key
 * with itself. `created` (default now) must be later than the instance's previous beacon: of
 * two addressable events with one `created_at` a relay keeps the lower id (NIP-01), so a
 * "stopped" in the second of the last "running" would be lost half the time.
 */
export function beaconTemplate(info: InstanceInfo, key: Uint8Array, created = nowSec()): EventTemplate {
  return {
    kind: KIND.appData,
    created_at: created,
    content: nip44.encrypt(JSON.stringify(info), key),
    tags: [
      ["d", `${D_PREFIX}${info.instance}`],
      // NIP-40: a relay may drop it once no one would count it live any more.
      ["expiration", String(created + STALE_MS / 1000)],
    ],
  };
}

export class InstanceBeacon {
  readonly info: InstanceInfo;
  private readonly key: Uint8Array;
  private timer?: NodeJS.Timeout;
  /** The refresh being published, if any: `stop()` lets it land before saying "stopped". */
  private refreshing?: Promise<unknown>;
  /** `created_at` of this instance's last beacon; the next one is later (see beaconTemplate). */
  private lastCreated = 0;
  private published = false;
  private lost = false;
  /** Instances already reported, so each conflict is logged once. */
  private readonly reported = new Set<string>();
  /**
   * Each other instance's newest beacon seen (its `created_at` and state): an older one, or
   * the same one again, is a replay — a relay sending a stopped instance's last "running" —
   * and never stops this daemon.
   */
  private readonly newest = new Map<string, { at: number; state: InstanceInfo["state"] }>();
  /** A conflict being confirmed with the relay's own record (one at a time). */
  private confirming = false;

  constructor(private readonly o: InstanceBeaconOptions) {
    this.info = { instance: o.instance, host: hostname(), pid: process.pid, started_at: nowSec(), fleet: o.fleet, state: "running" };
    this.key = nip44.getConversationKey(o.secretKey, o.pubkey);
  }

  /**
   * At start, before the daemon listens: refuses (InstanceConflictError, `instance.conflict`
   * logged) when another instance is live; else announces this one and checks once more.
   * A relay that cannot be asked throws (the caller retries); one that refuses the beacon is
   * logged and the daemon runs unannounced.
   */
  async claim(): Promise<void> {
    this.refuseIfOther(await this.live());
    if (!(await this.announce())) return;
    this.refuseIfOther(await this.live());
  }

  /** Keeps the beacon fresh and watches for other instances until `stop()`. */
  start(): void {
    this.o.relay.watch(
      SUB_INSTANCE,
      () => [{ kinds: [KIND.appData], authors: [this.o.pubkey], since: nowSec() - STALE_MS / 1000 }],
      (ev) => this.onBeacon(ev),
    );
    // One refresh at a time: during a relay outage a publish waits for the connection.
    this.timer = setInterval(() => {
      this.refreshing ??= this.announce()
        .catch(() => false)
        .finally(() => (this.refreshing = undefined));
    }, REFRESH_MS);
    this.timer.unref();
  }

  /** Says "stopped" on the relay (bounded), so another daemon may start at once. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    const bounded = new Promise((r) => setTimeout(r, STOP_NOTE_MS).unref());
    // A refresh still on its way would otherwise land after "stopped" and say "running" again.
    if (this.refreshing) await Promise.race([this.refreshing, bounded]);
    if (!this.published) return;
    await Promise.race([this.o.publisher.send(this.template("stopped")).catch(() => undefined), bounded]);
  }

  private refuseIfOther(others: Seen[]): void {
    const other = others[0];
    if (!other) return;
    this.log(other, "refused-start", "another daemon of this identity is running: this one does not start");
    throw new InstanceConflictError(other);
  }

  /** Live beacons of other instances of this identity (not of this daemon's fleet), oldest start first. */
  private async live(): Promise<Seen[]> {
    const events = await this.o.relay.query([
      { kinds: [KIND.appData], authors: [this.o.pubkey], since: nowSec() - STALE_MS / 1000, limit: 100 },
    ]);
    // Each instance by its latest beacon, should the relay return more than one.
    const latest = new Map<string, Seen>();
    for (const s of events.map((ev) => this.read(ev))) {
      if (!s) continue;
      this.isNewest(s);
      const had = latest.get(s.instance);
      if (!had || s.seen_at > had.seen_at || (s.seen_at === had.seen_at && s.state === "stopped")) latest.set(s.instance, s);
    }
    return [...latest.values()]
      .filter((s) => this.isOther(s))
      .sort((a, b) => a.started_at - b.started_at || (a.instance < b.instance ? -1 : 1));
  }

  private isOther(s: Seen): boolean {
    if (s.instance === this.info.instance || s.state !== "running") return false;
    if (nowSec() - s.seen_at > STALE_MS / 1000) return false;
    return !(this.info.fleet && s.fleet === this.info.fleet);
  }

  /** Notes `s` as its instance's newest beacon when it is; false for an older one or the same again. */
  private isNewest(s: Seen): boolean {
    const had = this.newest.get(s.instance);
    if (had && (s.seen_at < had.at || (s.seen_at === had.at && (had.state === "stopped" || s.state === "running")))) return false;
    this.newest.set(s.instance, { at: s.seen_at, state: s.state });
    return true;
  }

  private onBeacon(ev: Event): void {
    const s = this.read(ev);
    if (!s || s.instance === this.info.instance) return;
    if (!this.isNewest(s)) {
      if (s.state === "running" && !this.lost)
        this.o.logger.info(
          { evt: "instance.beacon_ignored", reason: "replayed", other: s.instance, event: ev.id, created_at: s.seen_at },
          "a beacon older than that instance's last (or the same again): a replay, not a running daemon",
        );
      return;
    }
    if (!this.isOther(s) || this.lost) return;
    // The later start gives way; equal starts are decided by the instance id.
    const mine = this.info;
    const iLose = s.started_at < mine.started_at || (s.started_at === mine.started_at && s.instance < mine.instance);
    if (iLose) void this.confirmLoss(s, ev.id);
    else if (!this.reported.has(s.instance)) {
      this.reported.add(s.instance);
      this.log(s, "continuing", "another daemon of this identity started later; it stops answering, this one goes on");
    }
  }

  /**
   * Before giving way, the relay's own record of the identity's beacons must show the other
   * instance live: a relay that replays a stopped instance's old beacon on the subscription
   * still keeps its "stopped" (addressable events keep the newest), and a daemon that cannot
   * ask keeps answering (a live instance refreshes every 30 s, so a real conflict comes back).
   */
  private async confirmLoss(s: Seen, event: string): Promise<void> {
    if (this.confirming) return;
    this.confirming = true;
    try {
      const live = await this.live().catch(() => undefined);
      const still = live?.find((x) => x.instance === s.instance);
      if (!still) {
        this.o.logger.info(
          {
            evt: "instance.beacon_ignored",
            reason: live ? "not-live-on-relay" : "relay-not-asked",
            other: s.instance,
            event,
            created_at: s.seen_at,
          },
          "another instance's beacon arrived, but the relay's record does not show it running: this daemon goes on",
        );
        return;
      }
      if (this.lost) return;
      this.lost = true;
      this.log(still, "stopping", "another daemon of this identity started earlier: this one stops answering");
      this.o.onLost(still);
    } finally {
      this.confirming = false;
    }
  }

  private log(other: Seen, action: "refused-start" | "stopping" | "continuing", msg: string): void {
    const line = {
      evt: "instance.conflict",
      action,
      instance: this.info.instance,
      other: {
        instance: other.instance,
        host: other.host,
        pid: other.pid,
        started_at: other.started_at,
        seen_at: other.seen_at,
        ...(other.fleet ? { fleet: other.fleet } : {}),
      },
    };
    if (action === "continuing") this.o.logger.warn(line, msg);
    else this.o.logger.error(line, msg);
  }

  /** Publishes this instance's beacon; false (logged) when the relay refused it. */
  private async announce(): Promise<boolean> {
    if (this.lost) return false;
    const { outcome } = await this.o.publisher.send(this.template("running"));
    if (isSuccess(outcome)) {
      this.published = true;
      return true;
    }
    this.o.logger.warn(
      { evt: "instance.beacon_failed", status: outcome.status, reason: outcome.reason },
      "could not announce this daemon on the relay: a second daemon of this identity would not be noticed",
    );
    return false;
  }

  private template(state: InstanceInfo["state"]): EventTemplate {
    this.lastCreated = Math.max(nowSec(), this.lastCreated + 1);
    return beaconTemplate({ ...this.info, state }, this.key, this.lastCreated);
  }

  /** A beacon of this identity, decrypted; undefined for anything else (another app's 30078, a forgery). */
  private read(ev: Event): Seen | undefined {
    if (ev.pubkey !== this.o.pubkey || ev.kind !== KIND.appData || !tagValue(ev, "d")?.startsWith(D_PREFIX)) return undefined;
    if (!verifySignature(ev)) return undefined;
    try {
      const info = JSON.parse(nip44.decrypt(ev.content, this.key)) as InstanceInfo;
      if (typeof info.instance !== "string" || typeof info.started_at !== "number") return undefined;
      return { ...info, seen_at: ev.created_at };
    } catch {
      return undefined;
    }
  }
}
