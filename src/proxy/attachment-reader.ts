/**
 * send_message's attachments over the daemon's HTTP slot. The daemon never opens a path an
 * agent names (docs/conversations.md "Attachments"): the path is the agent's, seen through
 * its sandbox, and the daemon can read the key. So the files are read as the stdio proxy
 * reads them, where the agent's files are: by a short-lived reader (attachment-reader-main.ts)
 * started the way the session's MCP servers are, in the agent's sandbox and working
 * directory, which hands back their bytes. One process per send_message that attaches
 * something; none for one that does not.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { spawnWithPrivateNetwork, type PrivateNetwork } from "../agent/sandbox-net.js";
import { retrySandboxSetup } from "../agent/sandbox.js";
import { MAX_REPLY_ATTACHMENTS } from "../contract/buzz-tool-schemas.js";
import { downstreamEnv } from "./env.js";

const MAIN = fileURLToPath(new URL("./attachment-reader-main.js", import.meta.url));

export interface AttachmentReaderOptions {
  /** Puts a command into the agent's sandbox, in the session's working directory (identity when unsandboxed). */
  wrap(server: { command: string; args: string[] }): { command: string; args: string[]; cwd: string; network?: PrivateNetwork };
  /** The agent process's environment, which the reader inherits from as a server would (./env.ts). */
  env: Record<string, string>;
  /** The largest file (`attachments.max_bytes`). */
  maxBytes: number;
  /** How long the reading may take (default 30 s: a file on a slow mount, not a hung one). */
  timeoutMs?: number;
}

/** send_message's arguments with `attachments` (paths) replaced by `files` (bytes); as they are when nothing is attached. */
export function sandboxedAttachmentReader(o: AttachmentReaderOptions): (args: Record<string, unknown>) => Promise<Record<string, unknown>> {
  const timeoutMs = o.timeoutMs ?? 30_000;
  // Base64 of every file at its largest, and room for the JSON around it.
  const maxOutput = Math.ceil((o.maxBytes * MAX_REPLY_ATTACHMENTS * 4) / 3) + 65_536;
  return async (args) => {
    const { attachments, ...rest } = args;
    if (!Array.isArray(attachments) || !attachments.length) return rest;
    const input = JSON.stringify({ attachments, maxBytes: o.maxBytes });
    // A sandbox that failed to set up (bubblewrap's own error, before the reader ran) is tried again, as an agent's start is.
    const out = await retrySandboxSetup(() => run(o, input, timeoutMs, maxOutput), {
      stderrOf: (err) => (err instanceof ReaderExitError ? err.stderr : undefined),
    });
    let parsed: { files?: unknown; error?: unknown };
    try {
      parsed = JSON.parse(out) as typeof parsed;
    } catch {
      throw new Error("the attachments could not be read (the reader's answer was cut off)");
    }
    if (typeof parsed.error === "string") throw new Error(parsed.error);
    return { ...rest, files: parsed.files };
  };
}

/** The reader exited with an error; `stderr` is its last output there. */
class ReaderExitError extends Error {
  constructor(
    code: number | null,
    readonly stderr: string,
  ) {
    super(`the attachments could not be read: the reader exited with ${code}${stderr.trim() ? `: ${stderr.trim()}` : ""}`);
  }
}

function run(o: AttachmentReaderOptions, input: string, timeoutMs: number, maxOutput: number): Promise<string> {
  const w = o.wrap({ command: process.execPath, args: [MAIN] });
  const opts = { cwd: w.cwd, env: downstreamEnv({}, o.env) };
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      if (w.network) {
        const s = spawnWithPrivateNetwork(w.command, w.args, w.network, opts);
        child = s.child;
        s.ready.catch((err: Error) => fail(`its sandbox could not start: ${err.message}`));
      } else child = spawn(w.command, w.args, { ...opts, stdio: ["pipe", "pipe", "pipe"] });
    } catch (err) {
      reject(new Error(`the attachments could not be read: ${(err as Error).message}`));
      return;
    }
    const out: Buffer[] = [];
    let size = 0;
    let stderr = "";
    let settled = false;
    const timer = setTimeout(() => fail(`reading them took longer than ${timeoutMs / 1000} s`), timeoutMs);
    function fail(why: string): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`the attachments could not be read: ${why}`));
    }
    child.stdout!.on("data", (c: Buffer) => {
      size += c.length;
      if (size > maxOutput) return fail("they are larger than attachments.max_bytes allows");
      out.push(c);
    });
    child.stderr!.on("data", (c: Buffer) => {
      stderr = (stderr + c.toString("utf8")).slice(-500);
    });
    child.on("error", (err) => fail(err.message));
    child.on("close", (code) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (code === 0) resolve(Buffer.concat(out).toString("utf8"));
      else reject(new ReaderExitError(code, stderr));
    });
    child.stdin!.on("error", () => undefined);
    child.stdin!.end(input);
  });
}
