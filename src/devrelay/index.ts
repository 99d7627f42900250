/**
 * The embedded Buzz-compatible development relay (docs/dev-relay.md; docs/protocol.md): one
 * port for WebSocket (NIP-01 + NIP-42) and the NIP-98 HTTP bridge, channels as NIP-29
 * groups with enforced membership. Started in-process by tests and `demo` through
 * `startDevRelay`, or as `buzz-bridge dev-relay` (command.ts).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { generateSecretKey } from "nostr-tools/pure";
import type { Event } from "nostr-tools";
import { bytesToHex, hexToBytes } from "nostr-tools/utils";
import { WebSocketServer } from "ws";
import { ChannelAdmin, type NewChannel } from "./admin.js";
import { Directory } from "./channels.js";
import { Connection } from "./connection.js";
import { RelayCore } from "./core.js";
import { initCrypto } from "./crypto.js";
import { DevRelayAdminError } from "./errors.js";
import { handleHttp, type Nip11Override } from "./http.js";
import { Nip98Guard } from "./nip98.js";
import { resolveLimits, type RelayLimits } from "./limits.js";
import type { RateLimiter } from "../base/rate-limit.js";
import type { KeyUsage } from "./rate-limit.js";
import { loadSeed, parseSeed, type SeedInput } from "./seed.js";
import { MemoryStore, type EventStore } from "./store.js";
import { MediaStore } from "./media-store.js";
import { SqliteStore } from "./sqlite-store.js";
import { pubkeyOf } from "../config/keys.js";

export { loadSeed } from "./seed.js";
export { SeedError, DevRelayAdminError } from "./errors.js";
export type { RelayLimits } from "./limits.js";
export type { KeyUsage } from "./rate-limit.js";
export type { Nip11Override } from "./http.js";
export { nip11Document } from "./nip11.js";

export interface DevRelayOptions {
  /** TCP port; default 0 = any free port (read `url` afterwards). */
  port?: number;
  /** Listen address; default 127.0.0.1 so a dev relay is never exposed by accident. */
  host?: string;
  /** Seed (members, channels) as an object or a YAML file path; default none. Keys may be npub or hex. */
  seed?: SeedInput | string;
  /** Directory for SQLite storage (WAL) that survives restarts; default memory only. */
  dataDir?: string;
  /** Time a client has to answer the NIP-42 challenge; default 5000 ms like Buzz's AUTH_TIMEOUT. */
  authTimeoutMs?: number;
  /**
   * Buzz's limits (limits.ts), on by default; any subset may be changed. The seed's `limits:`
   * apply first, these over them.
   */
  limits?: Partial<RelayLimits>;
  /** Switches the frame and HTTP quotas off (benchmarks and tests about something else). */
  noLimits?: boolean;
  /** Bearer token for `POST /admin/<op>`; default random (see `adminToken`). */
  adminToken?: string;
}

export interface DevRelay {
  /** `ws://127.0.0.1:PORT`, no trailing slash (the NIP-42 `relay` tag value). */
  url: string;
  /** `http://127.0.0.1:PORT` for the NIP-98 bridge. */
  httpUrl: string;
  /** The relay's own key (NIP-11 `self`), which signs 39000/39002/44100/44101 and workflow output; changes on `rotateKey`. */
  readonly relayPubkey: string;
  /** Bearer token of the admin HTTP API. */
  adminToken: string;
  port: number;
  /** Channels created or loaded from the seed, in seed order. */
  seeded: { id: string; name: string }[];
  /** The limits in force. */
  limits: RelayLimits;
  close(): Promise<void>;
  /** Cuts every connection (clients must reconnect and re-authenticate). */
  dropAll(): void;
  /** Stops and starts listening again on the same port, keeping all state. */
  restart(): Promise<void>;
  /** Stops listening (a relay outage: every connection cut, nothing answers), keeping all state until `resume`. */
  suspend(): Promise<void>;
  /** Listens again on the same port after `suspend`. */
  resume(): Promise<void>;
  addMember(channelId: string, pubkey: string, role?: string): Promise<void>;
  removeMember(channelId: string, pubkey: string): Promise<void>;
  /** Lets `pubkey` authenticate without being in any channel. */
  addRelayMember(pubkey: string): void;
  createChannel(c: NewChannel): Promise<string>;
  /** Changes a channel's name or description (publishes a new 39000). */
  updateChannel(channelId: string, c: { name?: string; about?: string }): Promise<void>;
  /** Sends a fresh AUTH challenge to every connection. */
  rechallenge(): void;
  /** While on, EVENTs are processed but never answered with OK. */
  setSwallowOk(on: boolean): void;
  /**
   * A workflow's message waking `agent` for `owner` (relay-signed kind 9 with Buzz's workflow
   * tags); `signAs: "previous"` signs it with the key from before the last rotation.
   */
  workflowWake(w: { channel: string; owner: string; agent: string; content?: string; signAs?: "current" | "previous" }): Promise<Event>;
  /**
   * Test facility: answers `GET /` with this (an HTTP status, raw text, or another document)
   * instead of the relay's real NIP-11 document; undefined restores the real one.
   */
  setNip11(o: Nip11Override | undefined): void;
  /** A new relay key (a new NIP-11 `self`): channel state is signed again and every connection is cut, as a restart would. */
  rotateKey(): Promise<string>;
  stats(): { connections: number; framesIn: number; reqFrames: number; events: number; mediaReads: number };
  /** What `pubkey` drew from its shared frame quota: WebSocket frames and HTTP calls admitted, and refusals. */
  keyUsage(pubkey: string): KeyUsage;
}

const RELAY_SECRET_META = "relay_secret";
/** ws rejects frames above this itself; frames between the Buzz limit and this get a NOTICE first. */
const WS_MAX_PAYLOAD = 8 * 1024 * 1024;

export async function startDevRelay(opts: DevRelayOptions = {}): Promise<DevRelay> {
  await initCrypto();
  const host = opts.host ?? "127.0.0.1";
  const seed = typeof opts.seed === "string" ? loadSeed(opts.seed) : opts.seed ? parseSeed(opts.seed) : undefined;
  let store: EventStore;
  if (opts.dataDir) {
    mkdirSync(opts.dataDir, { recursive: true });
    store = new SqliteStore(join(opts.dataDir, "devrelay.sqlite"));
  } else {
    store = new MemoryStore();
  }
  // The relay key persists with the data, so relay-signed state stays attributable after a restart.
  let secretHex = store.getMeta(RELAY_SECRET_META);
  if (!secretHex) {
    secretHex = bytesToHex(generateSecretKey());
    store.setMeta(RELAY_SECRET_META, secretHex);
  }
  const secret = hexToBytes(secretHex);
  const limits = resolveLimits({ limits: seed?.limits }, { limits: opts.limits, noLimits: opts.noLimits });
  const core = new RelayCore(store, new Directory(), secret, pubkeyOf(secret), limits);
  const admin = new ChannelAdmin(core);
  core.onSeat = (channel, pubkey, role) => admin.addMember(channel, pubkey, role);
  const seeded = seed ? admin.applySeed(seed).map((c) => ({ id: c.id, name: c.name })) : [];
  const nip98 = new Nip98Guard();
  const media = new MediaStore(opts.dataDir ? join(opts.dataDir, "media") : undefined);
  const adminToken = opts.adminToken ?? randomBytes(16).toString("hex");
  const connections = new Set<Connection>();
  let swallowOk = false;
  let nip11: Nip11Override | undefined;
  const connOpts = { authTimeoutMs: opts.authTimeoutMs ?? 5000, swallowOk: () => swallowOk };
  const httpQuota = new Map<string, RateLimiter>();

  const relay: DevRelay = {
    url: "",
    httpUrl: "",
    get relayPubkey() {
      return core.relayPubkey;
    },
    adminToken,
    port: 0,
    seeded,
    limits,
    async close() {
      await stopListening();
      store.close();
    },
    dropAll() {
      for (const c of connections) c.terminate();
    },
    async restart() {
      await stopListening();
      await listen(relay.port);
    },
    suspend: () => stopListening(),
    async resume() {
      if (!server) await listen(relay.port);
    },
    addMember: async (ch, pk, role) => admin.addMember(ch, pk, role),
    removeMember: async (ch, pk) => admin.removeMember(ch, pk),
    addRelayMember: (pk) => admin.addRelayMember(pk),
    createChannel: async (c) => admin.createChannel(c),
    updateChannel: async (id, c) => admin.updateChannel(id, c),
    rechallenge() {
      for (const c of connections) c.rechallenge();
    },
    setSwallowOk(on) {
      swallowOk = on;
    },
    workflowWake: async (w) => admin.workflowWake(w),
    setNip11(o) {
      nip11 = o;
    },
    async rotateKey() {
      const next = generateSecretKey();
      store.setMeta(RELAY_SECRET_META, bytesToHex(next));
      core.rotateKey(next, pubkeyOf(next));
      admin.republishState();
      relay.dropAll();
      return core.relayPubkey;
    },
    stats: () => ({
      connections: connections.size,
      framesIn: core.stats.framesIn,
      reqFrames: core.stats.reqFrames,
      events: store.count(),
      mediaReads: media.reads,
    }),
    keyUsage: (pk) => ({ ...(core.buckets.usage.get(pk) ?? { wsFrames: 0, httpCalls: 0, refused: 0 }) }),
  };

  async function adminOp(op: string, a: Record<string, unknown>): Promise<unknown> {
    const s = (k: string) => (typeof a[k] === "string" ? (a[k] as string) : undefined);
    switch (op) {
      case "create-channel":
        return { id: admin.createChannel(a as unknown as NewChannel) };
      case "add-member":
        return admin.addMember(s("channel") ?? "", s("pubkey") ?? "", s("role"));
      case "remove-member":
        return admin.removeMember(s("channel") ?? "", s("pubkey") ?? "");
      case "add-relay-member":
        return admin.addRelayMember(s("pubkey") ?? "");
      case "drop-all":
        return relay.dropAll();
      case "rechallenge":
        return relay.rechallenge();
      case "swallow-ok":
        return relay.setSwallowOk(a.on === true);
      case "stats":
        return relay.stats();
      case "workflow-wake": {
        const signAs = s("sign_as");
        const ev = admin.workflowWake({
          channel: s("channel") ?? "",
          owner: s("owner") ?? "",
          agent: s("agent") ?? "",
          content: s("content"),
          signAs: signAs as "current" | "previous" | undefined,
        });
        return { id: ev.id, pubkey: ev.pubkey };
      }
      case "set-nip11":
        return relay.setNip11(Object.keys(a).length ? (a as Nip11Override) : undefined);
      case "rotate-key":
        return { self: await relay.rotateKey() };
      case "key-usage":
        return relay.keyUsage(s("pubkey") ?? "");
      default:
        throw new DevRelayAdminError(`unknown admin op '${op}'`);
    }
  }

  let server: Server | undefined;
  let wss: WebSocketServer | undefined;

  async function listen(port: number): Promise<void> {
    const srv = createServer((req, res) => {
      handleHttp(req, res, { core, nip98, adminToken, admin: adminOp, httpQuota, media, nip11Override: () => nip11 }).catch(
        (err: unknown) => {
          if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: `internal error: ${(err as Error).message}` }));
        },
      );
    });
    const ws = new WebSocketServer({ server: srv, maxPayload: WS_MAX_PAYLOAD });
    ws.on("connection", (sock, req) => {
      const conn = new Connection(sock, req.headers.host ?? `${host}:${relay.port}`, core, connOpts);
      connections.add(conn);
      core.subscribers.add(conn);
      sock.on("close", () => {
        conn.onClose();
        connections.delete(conn);
        core.subscribers.delete(conn);
      });
    });
    await new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(port, host, () => {
        srv.off("error", reject);
        resolve();
      });
    });
    server = srv;
    wss = ws;
    const addr = srv.address();
    relay.port = typeof addr === "object" && addr ? addr.port : port;
    const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
    relay.url = `ws://${shown}:${relay.port}`;
    relay.httpUrl = `http://${shown}:${relay.port}`;
  }

  async function stopListening(): Promise<void> {
    for (const c of connections) c.terminate();
    const srv = server;
    server = undefined;
    wss?.close();
    wss = undefined;
    if (!srv) return;
    srv.closeAllConnections();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  }

  await listen(opts.port ?? 0);
  return relay;
}
