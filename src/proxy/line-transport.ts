/**
 * MCP stdio transports for the proxy's hot path: newline-delimited JSON, as the SDK's
 * StdioServerTransport/StdioClientTransport, but a line is only JSON.parse'd and
 * checked to be a JSON-RPC 2.0 object before it reaches the SDK's Protocol, which
 * classifies it with its own schema guards anyway. The SDK transports also parse every
 * message with the full zod JSONRPCMessage schema (a second full walk of each result,
 * on both sides of the proxy) and re-concatenate the read buffer on every chunk
 * (quadratic for multi-megabyte results); both showed up as the proxy's main costs.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { spawnWithPrivateNetwork, type PrivateNetwork } from "../agent/sandbox-net.js";
import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { scrub } from "../base/log.js";

/** Largest single message accepted; bigger ones are dropped with an error (default 64 MiB, above the 10 MB results agents may produce). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

class TransportError extends Error {
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
    private readonly maxBytes = MAX_MESSAGE_BYTES,
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
  /** Sees each message before the SDK does; returning true consumes it (pass-through.ts). */
  intercept?: (message: JSONRPCMessage) => boolean;
  protected closed = false;
  protected splitter = new LineSplitter(
    (line) => this.handleLine(line),
    (bytes) => this.onerror?.(new TransportError(`message larger than ${MAX_MESSAGE_BYTES} bytes dropped (${bytes}+ bytes)`)),
  );

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

/** The proxy's upstream side: our own stdin/stdout (the agent's end). */
export class FastStdioServerTransport extends LineTransport {
  constructor(
    private readonly input: Readable = process.stdin,
    private readonly out: Writable = process.stdout,
  ) {
    super();
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

export interface ChildSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /** An agent sandbox's private network to set up before the child runs (doctor starts servers that way). */
  network?: PrivateNetwork;
}

/** Last bytes of a child's stderr, for the log line when it fails; nsec-shaped text is masked. */
class StderrTail {
  private text = "";
  constructor(private readonly max = 4096) {}
  push(chunk: Buffer): void {
    this.text = (this.text + chunk.toString("utf8")).slice(-this.max);
  }
  toString(): string {
    return scrub(this.text.trim());
  }
}

/** The proxy's downstream side: one spawned MCP server. */
export class FastStdioClientTransport extends LineTransport {
  private child?: ChildProcess;
  readonly stderr = new StderrTail();
  private exited?: Promise<void>;

  constructor(private readonly spec: ChildSpec) {
    super();
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  protected get output(): Writable | undefined {
    return this.child?.stdin ?? undefined;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const opts = { env: this.spec.env, cwd: this.spec.cwd, windowsHide: true };
      const net = this.spec.network;
      const launched = net
        ? spawnWithPrivateNetwork(this.spec.command, this.spec.args, net, opts)
        : { child: spawn(this.spec.command, this.spec.args, { ...opts, stdio: ["pipe", "pipe", "pipe"] }), ready: Promise.resolve() };
      const child = launched.child;
      this.child = child;
      let spawned = false;
      this.exited = new Promise((done) => child.once("close", () => done()));
      child.once("spawn", () => {
        launched.ready.then(
          () => {
            spawned = true;
            resolve();
          },
          (err: Error) => {
            child.kill("SIGKILL");
            reject(new TransportError(`cannot start '${this.spec.command}': ${err.message}`));
          },
        );
      });
      child.once("error", (err) => {
        if (!spawned) reject(new TransportError(`cannot start '${this.spec.command}': ${err.message}`));
        else this.onerror?.(err);
        this.finish();
      });
      child.once("close", () => this.finish());
      child.stdout!.on("data", (chunk: Buffer) => this.splitter.push(chunk));
      child.stderr!.on("data", (chunk: Buffer) => this.stderr.push(chunk));
      // A child that exits early makes our writes fail with EPIPE; the close event reports it.
      child.stdin!.on("error", () => {});
    });
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }

  /** Ends stdin, then SIGTERM, then SIGKILL: servers that ignore EOF still go away. */
  async close(force = false): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      this.finish();
      return;
    }
    child.stdin?.end();
    const term = setTimeout(() => child.kill("SIGTERM"), force ? 0 : 200);
    const kill = setTimeout(() => child.kill("SIGKILL"), force ? 500 : 1500);
    await this.exited;
    clearTimeout(term);
    clearTimeout(kill);
    this.finish();
  }
}
