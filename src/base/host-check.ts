/**
 * The DNS-rebinding defence of the bridge's HTTP servers (the MCP slot, the ops endpoint;
 * docs/security.md): a browser that a page led to a name resolving to this machine sends
 * that name in `Host`, so a request is served only for the names this server answers to.
 * An IP literal cannot be rebound and is accepted where the server takes any address.
 */
import { isIP } from "node:net";

/** The names of the loopback interface. */
export const LOOPBACK_NAMES: readonly string[] = ["127.0.0.1", "localhost", "::1"];

export interface HostRule {
  /** Host names (or addresses) this server answers to, lowercase, without a port. */
  names: readonly string[];
  /** When set, the `Host` header must name this port too. */
  port?: number;
  /** Any IP literal is fine (a server listening on every address). */
  anyAddress?: boolean;
}

/** `name[:port]` or `[v6]:port` from a `Host` header; undefined when it is none of these. */
export function parseHostHeader(header: string | undefined): { name: string; port?: number } | undefined {
  if (!header) return undefined;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]/@]+))(?::(\d{1,5}))?$/.exec(header.trim());
  if (!m) return undefined;
  const name = (m[1] ?? m[2]!).toLowerCase().replace(/\.$/, "");
  return { name, ...(m[3] !== undefined ? { port: Number(m[3]) } : {}) };
}

/** Whether a request with this `Host` header is for this server under `rule`. */
export function hostAllowed(header: string | undefined, rule: HostRule): boolean {
  const h = parseHostHeader(header);
  if (!h) return false;
  if (rule.port !== undefined && h.port !== rule.port) return false;
  if (rule.names.some((n) => n.toLowerCase() === h.name)) return true;
  return rule.anyAddress === true && isIP(h.name) !== 0;
}

/** Whether a listen host is loopback, or every address (`0.0.0.0`, `::`). */
export function listenScope(host: string): "loopback" | "any" | "one" {
  const h = host.toLowerCase();
  if (h === "localhost" || h === "::1" || /^127\./.test(h)) return "loopback";
  if (h === "0.0.0.0" || h === "::" || h === "") return "any";
  return "one";
}
