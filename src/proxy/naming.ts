/**
 * Tool naming rules (docs/architecture.md §4). buzz-agent refuses a whole session
 * if any name contains `__`, has characters outside [A-Za-z0-9_-], or if its qualified
 * name exceeds 64 characters; Claude Code prefixes `mcp__<slot>__`. So: `prefix: false`
 * keeps names, others become `<server>_<tool>`, anything else is sanitised and
 * shortened deterministically, and a collision is an error naming both owners.
 */
import { createHash } from "node:crypto";
import { PROXY_SERVER_NAME } from "../contract/proxy-entry.js";

/** The longest prefix an agent adds to our tool names: Claude Code's `mcp__<slot>__`, the slot being the proxy's entry name. */
export const AGENT_PREFIX = `mcp__${PROXY_SERVER_NAME}__`;
/** Qualified name limit of LLM APIs and buzz-agent (MAX_QNAME_LEN). */
export const MAX_QUALIFIED_NAME = 64;
/** What is left for our own names: 64 − len("mcp__buzz__") = 53. */
export const NAME_BUDGET = MAX_QUALIFIED_NAME - AGENT_PREFIX.length;
/** buzz-agent's MAX_TOOLS_PER_SESSION. */
export const MAX_TOOLS = 128;

export function isHookName(name: string): boolean {
  return name.startsWith("_");
}

/** True when the name passes every rule as is. */
export function isValidExposedName(name: string): boolean {
  return name.length > 0 && name.length <= NAME_BUDGET && /^[A-Za-z0-9_-]+$/.test(name) && !name.includes("__");
}

/**
 * The name a downstream tool (or prompt) is exposed under. Deterministic: the same
 * inputs always give the same name, so a restarted server keeps its names.
 */
export function exposedName(server: string, tool: string, prefix: boolean): { name: string; changed: boolean } {
  const wanted = prefix ? `${server}_${tool}` : tool;
  if (isValidExposedName(wanted)) return { name: wanted, changed: false };
  let name = wanted.replace(/[^A-Za-z0-9_-]/g, "-").replace(/_{2,}/g, "_");
  if (name.length === 0) name = "tool";
  if (name.length > NAME_BUDGET) {
    const hash = createHash("sha256").update(wanted).digest("hex").slice(0, 6);
    name = `${name.slice(0, NAME_BUDGET - hash.length - 1).replace(/_+$/, "")}-${hash}`;
  }
  return { name, changed: true };
}

export class NameCollisionError extends Error {
  override name = "NameCollisionError";
  constructor(
    readonly tool: string,
    readonly first: string,
    readonly second: string,
  ) {
    super(`tool name '${tool}' is offered by both '${first}' and '${second}'; set prefix: true on one of them or remove one`);
  }
}
