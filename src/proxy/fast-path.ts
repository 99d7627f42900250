/**
 * The proxy's per-call hot path through the MCP SDK, measured (µs of CPU per proxied
 * echo call, zod 4, Node 20): the SDK's Protocol classifies each incoming message by
 * trying zod guards in the order response → error → request. For a request the first
 * two fail, and a failing zod parse builds an error object: ≈10 µs, the largest single
 * SDK cost per call (JSON parse+stringify of both legs is ≈3 µs). A JSON-RPC message
 * with a `method` and an `id` can only be a request, so it is handed straight to the
 * Protocol's own request dispatcher; everything else takes the SDK's path unchanged.
 *
 * `_onrequest` is internal to the SDK; when it is missing (a future SDK), nothing is
 * rerouted and the proxy simply runs at the SDK's normal speed.
 */
import type { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";

type Dispatch = (request: JSONRPCRequest, extra?: unknown) => void;

/** Call after `protocol.connect(transport)`. Returns whether the fast path is active. */
export function routeRequestsDirectly(protocol: Protocol<never, never, never>, transport: Transport): boolean {
  const dispatch = (protocol as unknown as { _onrequest?: Dispatch })._onrequest;
  const sdkPath = transport.onmessage;
  if (typeof dispatch !== "function" || typeof sdkPath !== "function") return false;
  transport.onmessage = (message: JSONRPCMessage, extra?: unknown) => {
    const m = message as { id?: unknown; method?: unknown };
    if (typeof m.method === "string" && (typeof m.id === "number" || typeof m.id === "string")) {
      dispatch.call(protocol, message as JSONRPCRequest, extra);
    } else {
      sdkPath.call(transport, message, extra as never);
    }
  };
  return true;
}
