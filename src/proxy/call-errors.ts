/**
 * The isError results a proxied tool call can end in, worded once for both call paths
 * (the pass-through and the SDK's). Tool failures reach the agent as results it can
 * read, never as protocol errors.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

export function errorResult(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/**
 * "MCP error <code>: <message>" with the prefix once: SDK servers already put it in the
 * message they send, and the SDK's McpError adds it again on our side.
 */
export function mcpErrorText(error: { code?: unknown; message?: unknown } | null): string {
  const prefix = `MCP error ${String(error?.code)}: `;
  let message = String(error?.message ?? "");
  while (message.startsWith(prefix)) message = message.slice(prefix.length);
  return prefix + message;
}

/** The server answered with a JSON-RPC error. */
export function refused(server: string, tool: string, error: { code?: unknown; message?: unknown } | null): CallToolResult {
  return errorResult(`MCP server '${server}' refused '${tool}': ${mcpErrorText(error)}`);
}

/** The server's process went away with the call outstanding. */
export function exitedDuring(server: string, tool: string): CallToolResult {
  return errorResult(`MCP server '${server}' exited during '${tool}'; it is being restarted`);
}

/** The server's `timeout` (configured, or the default) passed; the call was cancelled. */
export function timedOut(server: string, tool: string, ms: number): CallToolResult {
  return errorResult(
    `'${tool}' on MCP server '${server}' timed out after ${ms} ms (its timeout, mcp.servers.${server}.timeout) and was cancelled; try again, or a smaller step`,
  );
}
