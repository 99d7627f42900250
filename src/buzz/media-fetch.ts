/**
 * Downloading an attachment (docs/conversations.md "Attachments"), bounded every way a
 * hostile message or server could stretch it: only hosts the policy allows (media-guard.ts),
 * redirects followed only onto allowed hosts (at most 3), a size cap checked against the
 * announced length and again while the bytes arrive, one deadline for the whole download
 * and a shorter one for silence (a server that drips a byte at a time is cut off), and the
 * body's sha256 compared with the `x` the message claimed. Requests to the relay's own
 * media endpoint carry a Blossom authorization (kind 24242), and a NIP-98 one when the
 * relay refuses that; nothing the bridge signs goes to any other host.
 */
import { createHash } from "node:crypto";
import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { BodyTooLargeError, readBody } from "../base/http-body.js";
import { blossomHeader } from "../nostr/blossom.js";
import { nip98Header, type SigningKey } from "../nostr/nip98.js";
import { isNonPublic, MediaHostPolicy, NonPublicAddressError, publicOnlyLookup } from "./media-guard.js";

/** Why a download was refused; stable strings (logs, the prompt, tests). */
export type FetchRefusal =
  | "bad-url"
  | "not-allowed-host"
  | "private-address"
  | "too-large"
  | "hash-mismatch"
  | "timeout"
  | "http-status"
  | "redirect-not-allowed"
  | "too-many-redirects"
  | "network";

export type FetchOutcome =
  | { ok: true; bytes: Buffer; contentType?: string; via: "relay" | "allowed"; ms: number }
  | { ok: false; reason: FetchRefusal; detail: string };

export interface MediaFetcherOptions {
  /** The relay's HTTP origin (its media endpoint is `<origin>/media/…`). */
  relayOrigin: string;
  /**
   * `attachments.allow_hosts` and `attachments.timeout` (the whole download, first byte to
   * last), read at each download so a reload applies to the next one.
   */
  settings(): { allowHosts: readonly string[]; timeoutMs: number };
  /** Longest silence while connecting or downloading; default the smaller of 10 s and `timeoutMs`. */
  idleMs?: number;
  /** Signs the relay's media authorizations (the key, or the relay client's `sign`). */
  key: SigningKey;
}

const MAX_REDIRECTS = 3;

class Refused extends Error {
  constructor(
    readonly reason: FetchRefusal,
    detail: string,
  ) {
    super(detail);
  }
}

export class MediaFetcher {
  private policyFor?: { hosts: readonly string[]; policy: MediaHostPolicy };

  constructor(private readonly o: MediaFetcherOptions) {}

  private get policy(): MediaHostPolicy {
    const hosts = this.o.settings().allowHosts;
    if (this.policyFor?.hosts !== hosts) this.policyFor = { hosts, policy: new MediaHostPolicy(this.o.relayOrigin, hosts) };
    return this.policyFor.policy;
  }

  private get timeoutMs(): number {
    return this.o.settings().timeoutMs;
  }

  /** Downloads `url`, which must hash to `sha256`, up to `maxBytes`. Never throws. */
  async fetch(url: string, sha256: string, maxBytes: number): Promise<FetchOutcome> {
    const started = Date.now();
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return { ok: false, reason: "bad-url", detail: "not a URL" };
    }
    if (target.username || target.password) return { ok: false, reason: "bad-url", detail: "a URL with credentials in it" };
    const timeoutMs = this.timeoutMs;
    const deadline = started + timeoutMs;
    try {
      let first = true;
      for (let hop = 0; ; hop++) {
        const verdict = this.policy.verdict(target);
        if (!verdict.allowed) {
          throw new Refused(
            first ? "not-allowed-host" : "redirect-not-allowed",
            first
              ? `${target.host || target.protocol} is neither the relay's media endpoint nor in attachments.allow_hosts`
              : `redirected to ${target.host}, which is not an allowed host`,
          );
        }
        first = false;
        const relay = verdict.via === "relay";
        let res = await this.get(target, deadline, verdict.publicOnly, relay ? "blossom" : undefined, sha256);
        if (relay && res.statusCode === 401) {
          res.resume();
          res = await this.get(target, deadline, verdict.publicOnly, "nip98", sha256);
        }
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400 && res.headers.location) {
          res.resume();
          if (hop >= MAX_REDIRECTS) throw new Refused("too-many-redirects", `more than ${MAX_REDIRECTS} redirects`);
          target = new URL(res.headers.location, target);
          continue;
        }
        if (status < 200 || status >= 300) {
          res.resume();
          throw new Refused("http-status", `the server answered HTTP ${status}`);
        }
        const bytes = await this.body(res, maxBytes, deadline);
        const got = createHash("sha256").update(bytes).digest("hex");
        if (got !== sha256)
          throw new Refused(
            "hash-mismatch",
            `the file's sha256 is ${got.slice(0, 12)}…, not the ${sha256.slice(0, 12)}… the message claims`,
          );
        const contentType = res.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();
        return { ok: true, bytes, contentType, via: verdict.via, ms: Date.now() - started };
      }
    } catch (err) {
      if (err instanceof Refused) return { ok: false, reason: err.reason, detail: err.message };
      if (err instanceof NonPublicAddressError)
        return { ok: false, reason: "private-address", detail: `${err.host} resolves to ${err.address}, not a public address` };
      return { ok: false, reason: "network", detail: (err as Error).message };
    }
  }

  /** One GET; resolves with the response once its head arrived. */
  private get(
    url: URL,
    deadline: number,
    publicOnly: boolean,
    auth: "blossom" | "nip98" | undefined,
    sha256: string,
  ): Promise<IncomingMessage> {
    const headers: Record<string, string> = { accept: "*/*", "user-agent": "buzz-bridge" };
    if (auth === "blossom") headers.authorization = blossomHeader("get", sha256, this.o.key, url.host);
    if (auth === "nip98") headers.authorization = nip98Header(url.href, "GET", undefined, this.o.key);
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = send(url, { method: "GET", headers, ...(publicOnly ? { lookup: publicOnlyLookup } : {}) });
      let head: IncomingMessage | undefined;
      const headArrived = this.bound(req, deadline, reject, () => head);
      if (publicOnly) {
        // A second look at the address actually connected to (a proxy or a cached socket).
        req.on("socket", (s: Socket) =>
          s.once("connect", () => {
            if (s.remoteAddress && isNonPublic(s.remoteAddress)) req.destroy(new NonPublicAddressError(url.hostname, s.remoteAddress));
          }),
        );
      }
      req.once("response", (res) => {
        head = res;
        headArrived();
        resolve(res);
      });
      req.once("error", reject);
      req.end();
    });
  }

  /** The response body, refused when it passes `maxBytes` (announced or actual) or the deadline. */
  private async body(res: IncomingMessage, maxBytes: number, deadline: number): Promise<Buffer> {
    // The request's own bounds (get) end with its head; the body gets the rest of the deadline.
    const timer = setTimeout(
      () => res.destroy(new Refused("timeout", `not complete within ${Math.round(this.timeoutMs / 1000)} s`)),
      Math.max(0, deadline - Date.now()),
    );
    timer.unref();
    try {
      return await readBody(res, maxBytes);
    } catch (err) {
      if (err instanceof BodyTooLargeError)
        throw new Refused(
          "too-large",
          err.announced === undefined
            ? `more than the ${maxBytes} bytes allowed`
            : `the server announced ${err.announced} bytes, more than the ${maxBytes} allowed`,
        );
      if (!(err instanceof Refused) && !res.complete) throw new Refused("network", "the connection closed before the whole file arrived");
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The deadline and the silence bound on one request until its head arrives; returns the
   * clearing of the deadline (the body then has a timer of its own, see body()).
   */
  private bound(req: ClientRequest, deadline: number, reject: (e: Error) => void, response: () => IncomingMessage | undefined): () => void {
    const idle = Math.min(this.o.idleMs ?? 10_000, this.timeoutMs);
    const timer = setTimeout(
      () => {
        const e = new Refused("timeout", `not complete within ${Math.round(this.timeoutMs / 1000)} s`);
        req.destroy(e);
        reject(e);
      },
      Math.max(0, deadline - Date.now()),
    );
    timer.unref();
    req.once("close", () => clearTimeout(timer));
    // Silence on the socket, while connecting and while the body drips in.
    req.setTimeout(idle, () => {
      const e = new Refused("timeout", `the server sent nothing for ${Math.round(idle / 1000)} s`);
      const res = response();
      if (res) res.destroy(e);
      else req.destroy(e);
    });
    return () => clearTimeout(timer);
  }
}
