#!/usr/bin/env node
/**
 * The `buzz-bridge` command. It only parses the subcommand name and hands the rest of
 * argv to that subcommand's module, loaded lazily so `mcp-proxy` and `demo-agent`
 * (started once per agent session) do not pay for the daemon's imports, and `run` loads
 * only what the daemon runs (the development relay, demo, doctor and the MCP proxy stay
 * unloaded; see bench/README.md, figure 7).
 *
 * Exit codes: 0 ok, 1 usage or config error, 2 runtime failure.
 */
import { nodeRefusal } from "./base/node-version.js";
import { PACKAGE_VERSION, versionLine } from "./base/version.js";
import { PROXY_SUBCOMMAND } from "./contract/proxy-entry.js";
import { applyDaemonV8Settings } from "./app/http/v8-memory.js";
import { applyDaemonMallocTuning } from "./app/http/malloc-tuning.js";

export interface Command {
  summary: string;
  /** Loads the module that implements the command; its `main` returns the exit code. */
  load: () => Promise<{ main: (argv: string[]) => Promise<number> }>;
  /** Set up before the module loads, so the loading itself already runs under it. */
  prepare?: () => void;
}

const commands: Record<string, Command> = {
  run: {
    summary: "run the daemon",
    load: () => import("./app/commands/run-command.js"),
    prepare: () => {
      applyDaemonMallocTuning(); // first: it may re-execute the process
      applyDaemonV8Settings();
    },
  },
  check: { summary: "validate the config and print the effective settings", load: () => import("./app/commands/check-command.js") },
  doctor: { summary: "live self-check of relay, channels, agent and MCP servers", load: () => import("./app/commands/doctor-command.js") },
  agents: { summary: "the agent presets, which are installed, what each needs", load: () => import("./app/commands/agents-command.js") },
  attest: {
    summary: "print the NIP-OA auth tag an owner signs for an agent",
    load: () => import("./app/commands/attest-command.js"),
  },
  register: {
    summary: "publish the owner-signed record (kind 30177) of each agent of a config",
    load: () => import("./app/commands/register-command.js"),
  },
  keygen: { summary: "generate a new agent keypair", load: () => import("./app/commands/keygen-command.js") },
  demo: { summary: "scripted demo on the embedded relay (no network, no API key)", load: () => import("./app/commands/demo-command.js") },
  "dev-relay": { summary: "the Buzz-compatible development relay", load: () => import("./app/commands/dev-relay-command.js") },
  [PROXY_SUBCOMMAND]: { summary: "the aggregating MCP proxy on stdio", load: () => import("./app/commands/mcp-proxy-command.js") },
  "demo-agent": { summary: "the scripted demo agent (ACP on stdio)", load: () => import("./app/commands/demo-agent-command.js") },
  "sandbox-exec": {
    summary: "an agent sandbox's first process: carries allowed host loopback ports in (started by the daemon)",
    load: () => import("./app/commands/sandbox-exec-command.js"),
  },
  post: {
    summary: "post a message to a channel as a given key (for trying the demo)",
    load: () => import("./app/commands/post-command.js"),
  },
  tail: { summary: "a channel's messages, reactions and command outcomes, live", load: () => import("./app/commands/tail-command.js") },
  schema: { summary: "print the config JSON schema", load: () => import("./app/commands/schema-command.js") },
};

export function version(): string {
  return PACKAGE_VERSION;
}

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((c) => c.length));
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return (
    `usage: buzz-bridge <command> [options]\n\ncommands:\n${lines.join("\n")}\n\n` +
    `Run 'buzz-bridge <command> --help' for a command's options. --version prints the version.\n`
  );
}

export async function cli(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(usage());
    return name === undefined ? 1 : 0;
  }
  if (name === "--version" || name === "-V") {
    process.stdout.write(`${versionLine()}\n`);
    return 0;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`buzz-bridge: unknown command '${name}'\n\n${usage()}`);
    return 1;
  }
  // Before any command's module loads: they import node:sqlite, which an older Node lacks.
  const refusal = nodeRefusal();
  if (refusal) {
    process.stderr.write(`${refusal}\n`);
    return 1;
  }
  command.prepare?.();
  const mod = await command.load();
  return mod.main(rest);
}

cli(process.argv.slice(2)).then(
  (code) => {
    // A command resolves when its work is done; a handle left open (a socket in its
    // close handshake, a child's pipe) must not keep the process around after that.
    process.exitCode = code;
    setTimeout(() => process.exit(code), 1000).unref();
  },
  (err: unknown) => {
    process.stderr.write(`buzz-bridge: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  },
);
