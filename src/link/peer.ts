/**
 * One end of the daemon↔proxy link (protocol.ts): the MCP SDK's Protocol on a unix socket.
 * Apart from the messages because the SDK's protocol and its types' schemas are a few MiB
 * of an idle daemon's memory (bench/README.md figure 7): the daemon's link server loads this
 * with its first connection, the proxy at once.
 */
import { constants } from "node:buffer";
import type { Socket } from "node:net";
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { ErrorCode, McpError, type Notification, type Request, type Result } from "@modelcontextprotocol/sdk/types.js";
import { SocketTransport } from "../base/line-transport.js";
import { LinkError } from "./protocol.js";

/**
 * The largest line either end reads: as long as a string can be. A send_message's
 * attachments cross the link as bytes, up to `attachments.max_bytes` (at most 1 GiB) each.
 */
const LINK_MAX_MESSAGE_BYTES = constants.MAX_STRING_LENGTH;

/**
 * One end of the link. Nothing to negotiate: both ends are this program, the daemon
 * having started the agent that started the proxy.
 */
export class LinkPeer extends Protocol<Request, Notification, Result> {
  protected assertCapabilityForMethod(): void {}
  protected assertNotificationCapability(): void {}
  protected assertRequestHandlerCapability(): void {}
  protected assertTaskCapability(): void {}
  protected assertTaskHandlerCapability(): void {}

  /** Starts speaking on a connected socket; closing the peer destroys it. */
  open(socket: Socket): Promise<void> {
    return this.connect(new SocketTransport(socket, LINK_MAX_MESSAGE_BYTES));
  }
}

export function isTimeout(err: unknown): boolean {
  return err instanceof McpError && err.code === ErrorCode.RequestTimeout;
}

/**
 * The other end's error in its own words: the SDK's McpError puts `MCP error <code>: `
 * before the message it received.
 */
export function asLinkError(err: unknown): LinkError {
  if (err instanceof LinkError) return err;
  if (err instanceof McpError) {
    const prefix = `MCP error ${err.code}: `;
    return new LinkError(err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message, err.code);
  }
  return new LinkError((err as Error)?.message ?? String(err));
}
