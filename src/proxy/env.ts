/**
 * The environment a downstream MCP server gets: a safe allow-list of what the proxy
 * itself has (the agent may have cleared it) plus exactly the server's configured env.
 * Keys and the link token are never passed on, even if a server's env names them.
 */
import { SERVER_FORBIDDEN_ENV, SERVER_INHERITED_ENV } from "../contract/env.js";

export function downstreamEnv(configured: Record<string, string>, parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of SERVER_INHERITED_ENV) {
    const v = parent[key];
    if (v !== undefined) env[key] = v;
  }
  for (const [k, v] of Object.entries(configured)) if (!SERVER_FORBIDDEN_ENV.has(k)) env[k] = v;
  return env;
}
