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

/** True for an address outside the public internet (IPv4-mapped IPv6 is judged as its IPv4). */
export function isNonPublic(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return NON_PUBLIC.check(mapped[1]!, "ipv4");
  const family = isIP(address);
  if (family === 0) return true;
  return NON_PUBLIC.check(address, family === 4 ? "ipv4" : "ipv6");
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
