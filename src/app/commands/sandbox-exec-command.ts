/**
 * `buzz-bridge sandbox-exec [--forward PORT=SOCKET]... [--cwd DIR] -- COMMAND [ARGS]`: the
 * first process of an agent sandbox that may reach some of the host's loopback ports
 * (agent/loopback.ts). It listens on each PORT inside the sandbox's network namespace,
 * relays connections to the SOCKET the daemon serves, runs COMMAND with its own stdio (in
 * DIR: `doctor` starts an MCP server in the working directory a turn's proxy would give it),
 * passes stop signals on, and exits as COMMAND does. The daemon starts it; a person has no
 * use for it.
 */
import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { constants } from "node:os";
import { UsageError, withUsage } from "../../base/args.js";
import { forwardInside } from "../../agent/loopback.js";

const HELP = `usage: buzz-bridge sandbox-exec [--forward PORT=SOCKET]... [--cwd DIR] -- COMMAND [ARGS...]

Started by the daemon as the first process of an agent sandbox: listens on 127.0.0.1:PORT
(and ::1) inside the sandbox's network namespace for each --forward, relays each connection
to the unix SOCKET the daemon serves for that host loopback port, and runs COMMAND (in DIR
with --cwd).`;

const SIGNALS: NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP"];

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    if (argv[0] === "--help" || argv[0] === "-h") {
      process.stdout.write(`${HELP}\n`);
      return 0;
    }
    const sep = argv.indexOf("--");
    if (sep < 0 || sep === argv.length - 1) throw new UsageError(`a command after -- is required\n\n${HELP}`);
    const forwards: Array<{ port: number; socket: string }> = [];
    let cwd: string | undefined;
    const opts = argv.slice(0, sep);
    for (let i = 0; i < opts.length; i += 2) {
      const value = opts[i + 1] ?? "";
      const m = opts[i] === "--forward" ? /^(\d{1,5})=(.+)$/.exec(value) : null;
      if (m) forwards.push({ port: Number(m[1]), socket: m[2]! });
      else if (opts[i] === "--cwd" && value) cwd = value;
      else throw new UsageError(`unexpected '${opts[i]}': give --forward PORT=SOCKET or --cwd DIR\n\n${HELP}`);
    }
    for (const f of forwards) {
      try {
        for (const s of await forwardInside(f.port, f.socket)) s.unref();
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "EACCES" || code === "EPERM") {
          // A port below 1024 needs a capability the sandbox drops: the agent starts without it.
          process.stderr.write(
            `buzz-bridge sandbox-exec: warning: loopback port ${f.port} is not carried into the sandbox (${code}: ports below 1024 need a capability the sandbox drops); the agent cannot reach 127.0.0.1:${f.port}; give the service a port of 1024 or above to reach it from the sandbox\n`,
          );
          continue;
        }
        process.stderr.write(`buzz-bridge sandbox-exec: cannot listen on loopback port ${f.port}: ${(err as Error).message}\n`);
        return 2;
      }
    }
    if (cwd !== undefined) {
      try {
        if (!statSync(cwd).isDirectory()) throw new Error("not a directory");
      } catch (err) {
        // Spawning there would fail as "ENOENT" for the command: say which path is missing.
        process.stderr.write(`buzz-bridge sandbox-exec: cannot use working directory ${cwd} in the sandbox: ${(err as Error).message}\n`);
        return 2;
      }
    }
    const [command, ...args] = argv.slice(sep + 1);
    const child = spawn(command!, args, { stdio: "inherit", cwd });
    for (const sig of SIGNALS) process.on(sig, () => child.kill(sig));
    return new Promise<number>((resolve) => {
      child.once("error", (err) => {
        process.stderr.write(`buzz-bridge sandbox-exec: cannot run ${command}: ${err.message}\n`);
        resolve(127);
      });
      // As a shell reports it: 128 + the signal's number for a command killed by a signal.
      child.once("exit", (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
    });
  });
}
