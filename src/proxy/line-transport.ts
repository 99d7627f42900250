/**
 * The proxy's downstream side: one spawned MCP server, spoken to over its stdio with the
 * line transport of base/line-transport.ts.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Writable } from "node:stream";
import { spawnWithPrivateNetwork, type PrivateNetwork } from "../agent/sandbox-net.js";
import { LineTransport, TransportError } from "../base/line-transport.js";
import { scrub } from "../base/log.js";

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
