/**
 * The relay's NIP-11 document, read at start and again after every (re)connect
 * (docs/protocol.md §7): `GET <http origin>/` with `Accept: application/nostr+json`. A
 * document that is missing or malformed, or states limits that cannot be true, leaves the
 * bridge on Buzz's defaults with one warning per read naming what was wrong
 * (nostr/nip11.ts). The relay's `self` is trusted only as read since the last reconnect: a
 * failed read forgets it until the next good one, so a key the relay rotated away from is
 * never trusted for longer than one connection.
 */
import type { Logger } from "../base/log.js";
import { silentLogger } from "../base/log.js";
import { defaultRelayInfo, parseRelayInfo, type RelayInfo } from "../nostr/nip11.js";
import { httpOrigin } from "./auth.js";
import { httpRequest } from "../base/http-request.js";

/** A NIP-11 document is a page of JSON; one larger than this is not read on (a relay answering endlessly). */
const NIP11_MAX_BYTES = 1024 * 1024;

export interface RelayInfoOptions {
  /** The relay's WebSocket URL; the document is at its HTTP origin. */
  url: string;
  logger?: Logger;
  /** Per read. Default 5 s. */
  timeoutMs?: number;
}

export class RelayInfoSource {
  private current: RelayInfo = defaultRelayInfo("the relay's NIP-11 document has not been read yet");
  private pending: Promise<RelayInfo> | undefined;
  /** Every key the relay has announced as `self` before the current one. */
  private readonly formerSelves = new Set<string>();
  private readonly log: Logger;
  private lastProblems = "";
  readonly metrics = { reads: 0, failures: 0 };
  /** Called after every read with the new document (limits may have changed). */
  onChange?: (info: RelayInfo) => void;

  constructor(private readonly opts: RelayInfoOptions) {
    this.log = opts.logger ?? silentLogger();
  }

  /** The document as last read (Buzz's defaults before the first read). */
  get info(): RelayInfo {
    return this.current;
  }

  /** Keys the relay used as `self` before, for telling a stale workflow signature from a forged one. */
  get previousSelves(): ReadonlySet<string> {
    return this.formerSelves;
  }

  /** The document as of the latest read, waiting for a read that is under way. */
  settled(): Promise<RelayInfo> {
    return this.pending ?? Promise.resolve(this.current);
  }

  /** Reads the document again (a reconnect); a read already under way is shared. */
  refresh(): Promise<RelayInfo> {
    this.pending ??= this.read().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async read(): Promise<RelayInfo> {
    const url = `${httpOrigin(this.opts.url)}/`;
    this.metrics.reads++;
    let next: RelayInfo;
    try {
      const res = await httpRequest(url, {
        headers: { accept: "application/nostr+json" },
        timeoutMs: this.opts.timeoutMs ?? 5000,
        maxBytes: NIP11_MAX_BYTES,
      });
      const text = res.text;
      if (!res.ok) next = defaultRelayInfo(`no NIP-11 document at ${url} (HTTP ${res.status}); using Buzz's default limits, no relay key`);
      else {
        let doc: unknown;
        try {
          doc = JSON.parse(text);
        } catch {
          doc = undefined;
        }
        next =
          doc === undefined
            ? defaultRelayInfo(`the NIP-11 document at ${url} is not JSON; using Buzz's default limits, no relay key`)
            : parseRelayInfo(doc);
      }
    } catch (err) {
      next = defaultRelayInfo(
        `could not read the NIP-11 document at ${url}: ${(err as Error).message}; using Buzz's default limits, no relay key`,
      );
    }
    if (next.source === "defaults") this.metrics.failures++;
    const prevSelf = this.current.self;
    if (prevSelf && prevSelf !== next.self) this.formerSelves.add(prevSelf);
    if (next.self) this.formerSelves.delete(next.self);
    this.current = next;
    this.report(next, prevSelf);
    this.onChange?.(next);
    return next;
  }

  /** One warning when the document's problems change (not one per reconnect), one info line when the key changes. */
  private report(info: RelayInfo, prevSelf: string | undefined): void {
    const problems = info.problems.join("; ");
    if (problems && problems !== this.lastProblems)
      this.log.warn({ evt: "relay.nip11_problem", problems: info.problems }, `relay NIP-11: ${problems}`);
    this.lastProblems = problems;
    if (info.self && prevSelf && info.self !== prevSelf)
      this.log.info(
        { evt: "relay.self_changed", from: prevSelf, to: info.self },
        "the relay announces a new signing key (NIP-11 self); output signed by the old one is no longer trusted",
      );
  }
}
