/**
 * JSON-RPC as MCP frames it on a stream (one JSON object a line), as an MCP SDK Transport:
 * the stdio proxy's end towards the agent, its downstream servers (proxy/line-transport.ts)
 * and the daemon↔proxy link's unix socket (link/). Like the SDK's
 * StdioServerTransport/StdioClientTransport, but a line is only JSON.parse'd and checked
 * to be a JSON-RPC 2.0 object before it reaches the SDK's Protocol, which classifies it
 * with its own schema guards anyway. The SDK transports also parse every message with the
 * full zod JSONRPCMessage schema (a second full walk of each result, on both sides of the
 * proxy) and re-concatenate the read buffer on every chunk (quadratic for multi-megabyte
 * results); both showed up as the proxy's main costs.
 */
import type { Socket } from "node:net";
import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { scrub } from "./log.js";

/** Largest single message accepted by default; bigger ones are dropped with an error (64 MiB, above the 10 MB results agents may produce). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export class TransportError extends Error {
  override name = "TransportError";
}

/** Splits a byte stream into lines without re-copying the buffered prefix on each chunk. */
class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private discarding = false;

  constructor(
    private readonly onLine: (line: Buffer) => void,
    private readonly onOversize: (bytes: number) => void,
    private readonly maxBytes: number,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    let nl: number;
    while ((nl = chunk.indexOf(10, start)) !== -1) {
      let line = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.discarding) {
        this.discarding = false;
        continue;
      }
      if (this.pending.length > 0) {
        this.pending.push(line);
        line = Buffer.concat(this.pending, this.pendingBytes + line.length);
        this.pending = [];
        this.pendingBytes = 0;
      }
      this.onLine(line);
    }
    if (start >= chunk.length || this.discarding) return;
    const rest = chunk.subarray(start);
    this.pendingBytes += rest.length;
    if (this.pendingBytes > this.maxBytes) {
      this.onOversize(this.pendingBytes);
      this.pending = [];
      this.pendingBytes = 0;
      this.discarding = true;
      return;
    }
    this.pending.push(rest);
  }
}

function decode(line: Buffer): JSONRPCMessage {
  let end = line.length;
  if (end > 0 && line[end - 1] === 13) end--;
  const msg = JSON.parse(line.toString("utf8", 0, end)) as { jsonrpc?: unknown };
  if (msg === null || typeof msg !== "object" || msg.jsonrpc !== "2.0") throw new TransportError("not a JSON-RPC 2.0 message");
  return msg as JSONRPCMessage;
}

/** Shared reading/writing over a readable/writable pair. */
export abstract class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Sees each message before the SDK does; returning true consumes it (proxy/pass-through.ts). */
  intercept?: (message: JSONRPCMessage) => boolean;
  protected closed = false;
  protected readonly splitter: LineSplitter;

  constructor(maxMessageBytes = MAX_MESSAGE_BYTES) {
    this.splitter = new LineSplitter(
      (line) => this.handleLine(line),
      (bytes) => this.onerror?.(new TransportError(`message larger than ${maxMessageBytes} bytes dropped (${bytes}+ bytes)`)),
      maxMessageBytes,
    );
  }

  abstract start(): Promise<void>;
  abstract close(): Promise<void>;
  protected abstract get output(): Writable | null | undefined;

  private handleLine(line: Buffer): void {
    if (line.length === 0 || (line.length === 1 && line[0] === 13)) return;
    let msg: JSONRPCMessage;
    try {
      msg = decode(line);
    } catch (err) {
      const preview = scrub(line.toString("utf8", 0, Math.min(line.length, 120)));
      this.onerror?.(new TransportError(`unreadable line (${(err as Error).message}): ${preview}`));
      return;
    }
    if (this.intercept?.(msg)) return;
    this.onmessage?.(msg);
  }

  private get openOutput(): Writable | undefined {
    const out = this.output;
    return out && !this.closed && !out.destroyed ? out : undefined;
  }

  /** One message as a line (the pass-through's MessageSink; a line needs no request to be related to). */
  sendMessage(message: Record<string, unknown>): void {
    this.sendLine(JSON.stringify(message));
  }

  /** Writes one serialized message; false when the other end is gone. Node buffers past the pipe's capacity. */
  sendLine(line: string): boolean {
    const out = this.openOutput;
    out?.write(line + "\n");
    return out !== undefined;
  }

  send(message: JSONRPCMessage): Promise<void> {
    const out = this.openOutput;
    if (!out) return Promise.reject(new TransportError("transport closed"));
    return new Promise((resolve) => {
      if (out.write(JSON.stringify(message) + "\n")) resolve();
      else out.once("drain", resolve);
    });
  }
}

/** Messages over a readable/writable pair: by default our own stdin/stdout (the stdio proxy's end towards the agent). */
export class StreamTransport extends LineTransport {
  constructor(
    private readonly input: Readable = process.stdin,
    private readonly out: Writable = process.stdout,
    maxMessageBytes?: number,
  ) {
    super(maxMessageBytes);
  }

  protected get output(): Writable {
    return this.out;
  }

  private onData = (chunk: Buffer) => this.splitter.push(chunk);
  private onEnd = () => void this.close();
  private onErr = (err: Error) => this.onerror?.(err);

  async start(): Promise<void> {
    this.input.on("data", this.onData);
    this.input.on("end", this.onEnd);
    this.input.on("error", this.onErr);
    this.out.on("error", this.onErr);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off("data", this.onData);
    this.input.off("end", this.onEnd);
    this.input.pause();
    this.onclose?.();
  }
}

/** Messages over a connected socket, which closing the transport destroys and whose end closes it. */
export class SocketTransport extends StreamTransport {
  constructor(
    private readonly socket: Socket,
    maxMessageBytes?: number,
  ) {
    super(socket, socket, maxMessageBytes);
    // A socket destroyed with no end from the other side (an error, our own destroy) closes too.
    socket.once("close", () => void this.close());
  }

  override async close(): Promise<void> {
    await super.close();
    this.socket.destroy();
  }
}
