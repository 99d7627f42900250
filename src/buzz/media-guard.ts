/**
 * Where the bridge may download an attachment from (docs/conversations.md "Attachments"):
 * the relay's own media endpoint, or a host the operator listed in `attachments.allow_hosts`
 * — never a URL somebody pasted pointing anywhere else (no SSRF through a message).
 *
 * A host listed by name must resolve to public addresses only: the check runs inside the
 * connection's own DNS look-up, on the very addresses the socket then connects to, so a
 * name that resolves to a public address for a check and to 169.254.169.254 for the
 * connection (DNS rebinding) has no gap to slip through. A private or loopback address is
 * reachable only when the operator wrote that address itself in `allow_hosts`, or when it
 * is the relay's own.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";

/** Addresses that are not the public internet: loopback, private, link-local (cloud metadata), CGNAT, multicast, reserved. */
const NON_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  NON_PUBLIC.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96],
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  NON_PUBLIC.addSubnet(net, prefix, "ipv6");

/**
 * The IPv4 address an IPv6 address carries, for the forms that reach it: IPv4-mapped
 * (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`)
 * and 6to4 (`2002:AABB:CCDD::`), in either notation (`::ffff:7f00:1` is `::ffff:127.0.0.1`).
 */
function embeddedIPv4(address: string): string | undefined {
  const groups = ipv6Groups(address);
  if (!groups) return undefined;
  const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (groups[0] === 0x2002) return quad(groups[1]!, groups[2]!);
  if (!zeros(0, 4)) return undefined;
  const tail = quad(groups[6]!, groups[7]!);
  if (groups[4] === 0 && groups[5] === 0xffff) return tail; // mapped
  if (groups[4] === 0xffff && groups[5] === 0) return tail; // translated
  if (groups[4] === 0 && groups[5] === 0 && (groups[6] !== 0 || groups[7]! > 1)) return tail; // compatible (not :: or ::1)
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (`isIP` said 6), a trailing dotted quad included. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, "");
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const part = (s: string | undefined) => (s ? s.split(":").map((g) => Number.parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const groups = tail === undefined ? h : [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * True for an address outside the public internet. An IPv6 address carrying an IPv4 one
 * (mapped, compatible, translated, 6to4) is judged as that IPv4 too; anything that is not
 * an address in standard notation (`2130706433`, `0x7f.1`, `127.0.0.1.`) counts as private,
 * since a resolver may read it as one.
 */
export function isNonPublic(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return NON_PUBLIC.check(address, "ipv4");
  const v4 = embeddedIPv4(address);
  if (v4 !== undefined && NON_PUBLIC.check(v4, "ipv4")) return true;
  return NON_PUBLIC.check(address, "ipv6");
}

/** How a URL's host may be reached: not at all, or with or without the public-address rule. */
export type HostVerdict = { allowed: false } | { allowed: true; via: "relay" | "allowed"; publicOnly: boolean };

/** `host[:port]` as written in allow_hosts, normalised (lowercase, IPv6 in brackets, the scheme's default port dropped). */
function hostKey(hostname: string, port: string, protocol: string): { host: string; withPort: string } {
  const host = hostname.toLowerCase();
  const defaultPort = protocol === "https:" ? "443" : "80";
  return { host, withPort: port && port !== defaultPort ? `${host}:${port}` : host };
}

export class MediaHostPolicy {
  private readonly relay: URL;
  private readonly allowed: Set<string>;

  /** `relayOrigin`: the relay's HTTP origin (`http(s)://host[:port]`); `allowHosts`: `attachments.allow_hosts`. */
  constructor(relayOrigin: string, allowHosts: readonly string[]) {
    this.relay = new URL(relayOrigin);
    this.allowed = new Set(allowHosts.map((h) => h.trim().toLowerCase()).filter(Boolean));
  }

  /** Whether `url` may be fetched, and under which rule; the relay's own media endpoint comes first. */
  verdict(url: URL): HostVerdict {
    if (url.protocol !== "http:" && url.protocol !== "https:") return { allowed: false };
    if (url.origin === this.relay.origin && url.pathname.startsWith("/media/")) return { allowed: true, via: "relay", publicOnly: false };
    const { host, withPort } = hostKey(url.hostname, url.port, url.protocol);
    // `host` allows any port of it, `host:port` that port only.
    if (!this.allowed.has(withPort) && !this.allowed.has(host)) return { allowed: false };
    // Written as an address by the operator: that address is meant, private or not.
    const bare = host.replace(/^\[|\]$/g, "");
    return { allowed: true, via: "allowed", publicOnly: isIP(bare) === 0 };
  }

  /** The relay's own origin, where media requests carry the bridge's authorization. */
  isRelay(url: URL): boolean {
    return url.origin === this.relay.origin;
  }
}

export class NonPublicAddressError extends Error {
  override name = "NonPublicAddressError";
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, which is not a public address`);
  }
}

/**
 * A DNS look-up for `http.request({ lookup })` that refuses non-public addresses: the
 * socket connects to exactly what this returns, so the check and the connection cannot
 * see different answers.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return (callback as (e: NodeJS.ErrnoException | null, a: LookupAddress[]) => void)(err, []);
    const list = addresses as LookupAddress[];
    const bad = list.find((a) => isNonPublic(a.address));
    if (bad) return (callback as (e: Error, a: LookupAddress[]) => void)(new NonPublicAddressError(hostname, bad.address), []);
    if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, list);
    const first = list[0]!;
    (callback as (e: null, a: string, f: number) => void)(null, first.address, first.family);
  });
};
