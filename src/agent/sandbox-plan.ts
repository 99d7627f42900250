/**
 * Which agent processes run sandboxed, and how: `agent.sandbox` / `agent.network` with a
 * channel's overrides (stricter only), bubblewrap probed once, and for each process the
 * launcher (bwrap and its arguments), the channel's HOME and the environment changes.
 *
 *   auto        bubblewrap when it works here; else one warning and agents run unsandboxed
 *               (in a team, where that agent could read the other identities' keys: a
 *               start-up failure, unless `team.allow_unsandboxed` accepts it)
 *   bubblewrap  bubblewrap or nothing: start-up fails naming what to install or enable
 *   off         no sandbox
 *
 * With `agent.network: on` a sandbox gets a network of its own through slirp4netns
 * (sandbox-net.ts: outbound only, the host's loopback out of reach but for the ports the
 * configuration names, loopback.ts); where slirp4netns is missing or cannot connect a
 * sandbox, the sandbox runs on the host's network with a warning.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cliPath } from "../base/cli-path.js";
import type { Logger } from "../base/log.js";
import { silentLogger } from "../base/log.js";
import { channelDirName, type ChannelRef } from "./cwd.js";
import {
  BUBBLEWRAP_ADVICE,
  bubblewrapArgs,
  ensurePlaceholder,
  hiddenBy,
  hiddenPaths,
  resolveCommand,
  NETWORK_STRICTNESS,
  probeBubblewrap,
  SANDBOX_STRICTNESS,
  type BubblewrapProbe,
  type NetworkMode,
  type SandboxBind,
  type SandboxMode,
  type SandboxNetwork,
} from "./sandbox.js";
import { LoopbackRelay } from "./loopback.js";
import { probeSlirp4netns, SLIRP_DNS, SLIRP4NETNS_ADVICE, type PrivateNetwork, type Slirp4netnsProbe } from "./sandbox-net.js";

/** bubblewrap is required (`agent.sandbox: bubblewrap`) but cannot run here. */
export class SandboxError extends Error {
  override name = "SandboxError";
}

/** A channel's `agent` overrides. */
export interface ChannelIsolation {
  sandbox?: SandboxMode;
  network?: NetworkMode;
}

export interface SandboxPolicy {
  mode: SandboxMode;
  network: NetworkMode;
  binds: SandboxBind[];
  /** Paths the bridge's configuration names for itself: key file, config file, state dir, agents' area. */
  hide: string[];
  /** The state directory: channel HOMEs live in `homes/`, the placeholder in `sandbox/`. */
  stateDir: string;
  /** The bubblewrap executable; default `bwrap` on PATH. */
  bwrap?: string;
  /**
   * The bridge's own installation (the folder holding its dist/ and node_modules/), bound
   * read-only: the MCP proxy runs inside the sandbox from there, and an installation under
   * /tmp (a CI checkout, say) would otherwise vanish behind the sandbox's private /tmp.
   * Paths hidden beneath it stay hidden (deeper mounts come later).
   */
  install?: string;
  /** The slirp4netns executable; default `slirp4netns` on PATH. */
  slirp4netns?: string;
  /** Host loopback ports sandboxed processes may still reach (loopback.ts); never the daemon's own HTTP port. */
  loopbackPorts?: number[];
  /**
   * In a team of two or more: what this identity's agent could read of the others' were it
   * unsandboxed (their keys, the config, the team's state), and whether the operator accepted
   * that (`team.allow_unsandboxed`). `auto` without a working bubblewrap then refuses to
   * start, as `off` in a team is a config error (config/load.ts).
   */
  team?: { exposed: string[]; allowUnsandboxed: boolean };
}

/** How one process is launched: prefix the agent command with `command args`, lay `env` over its environment. */
export interface SandboxLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  home: string;
  /** Set when the sandbox gets a private network: spawn it with sandbox-net.ts's spawnWithPrivateNetwork. */
  network?: PrivateNetwork;
  /**
   * With `network`: the same sandbox on the host's network, for when slirp4netns cannot
   * connect this one (the spawn logs a warning and uses these args instead).
   */
  hostNetworkArgs?: string[];
}

export class AgentSandbox {
  private probed: BubblewrapProbe | undefined;
  private slirpProbed: Slirp4netnsProbe | undefined;
  private warned = false;
  private netWarned = false;
  private relay?: LoopbackRelay;
  private readonly sockets = new Map<number, string>();

  constructor(
    readonly policy: SandboxPolicy,
    private readonly log: Logger = silentLogger(),
    private readonly probeFn: () => BubblewrapProbe = () => probeBubblewrap(policy.bwrap),
    private readonly slirpProbeFn: () => Slirp4netnsProbe = () => probeSlirp4netns(policy.slirp4netns),
  ) {}

  /** bubblewrap's probe, run once. */
  get probe(): BubblewrapProbe {
    this.probed ??= this.probeFn();
    return this.probed;
  }

  /** slirp4netns's probe, run once. */
  get slirp(): Slirp4netnsProbe {
    this.slirpProbed ??= this.slirpProbeFn();
    return this.slirpProbed;
  }

  /**
   * Starts the daemon's end of the loopback ports sandboxes may reach (loopback.ts); call once
   * before the first launch. Without ports, nothing.
   */
  async start(): Promise<void> {
    const ports = this.policy.loopbackPorts ?? [];
    if (ports.length === 0 || this.relay) return;
    // Per process: a doctor run beside the daemon must not take over the daemon's sockets.
    this.relay = new LoopbackRelay(join(this.policy.stateDir, "sandbox", `loopback-${process.pid}`));
    for (const port of ports) this.sockets.set(port, await this.relay.socketFor(port));
  }

  close(): void {
    this.relay?.close();
    this.relay = undefined;
    this.sockets.clear();
  }

  /**
   * Start-up check for `agent.sandbox` and each channel's override: throws SandboxError
   * when bubblewrap is required and cannot run; with `auto`, logs one warning. Returns
   * whether agents of the default policy run sandboxed.
   */
  check(channels: ChannelIsolation[] = []): boolean {
    const modes = [this.policy.mode, ...channels.map((c) => c.sandbox).filter((m): m is SandboxMode => m !== undefined)];
    if (modes.every((m) => m === "off")) {
      this.log.info(
        { evt: "agent.sandbox", state: "off", reason: "agent.sandbox: off" },
        "agents run without a sandbox (agent.sandbox: off)",
      );
      return false;
    }
    const probe = this.probe;
    if (!probe.ok) {
      if (modes.includes("bubblewrap")) {
        throw new SandboxError(`agent.sandbox is bubblewrap but ${probe.reason}: ${BUBBLEWRAP_ADVICE}`);
      }
      this.unsandboxedFallback(probe.reason);
      return false;
    }
    const on = this.policy.mode !== "off";
    const wantsNet = this.policy.network === "on" || channels.some((c) => c.network === "on");
    const network = this.policy.network === "off" ? "none" : this.slirp.ok ? "private" : "host";
    this.log.info(
      {
        evt: "agent.sandbox",
        state: on ? "bubblewrap" : "off",
        version: probe.version,
        network,
        ...(network === "private" ? { loopback_ports: this.policy.loopbackPorts ?? [] } : {}),
      },
      on ? "agents run in a bubblewrap sandbox" : "agents run without a sandbox except in channels that ask for one",
    );
    if (wantsNet && !this.slirp.ok) this.warnHostNetwork(this.slirp.reason);
    return on;
  }

  private warnHostNetwork(reason: string): void {
    if (this.netWarned) return;
    this.netWarned = true;
    this.log.warn(
      { evt: "agent.sandbox", state: "host-network", reason, advice: SLIRP4NETNS_ADVICE },
      `${reason}: sandboxed agents with agent.network: on share the host's network and can reach services on its loopback (the daemon's /status and /metrics among them)`,
    );
  }

  /** `auto` without a working bubblewrap: agents run unsandboxed, warned once; in a team only when accepted. */
  private unsandboxedFallback(reason: string): void {
    const team = this.policy.team;
    if (team && !team.allowUnsandboxed)
      throw new SandboxError(
        `agent.sandbox is auto and ${reason}: in this team an unsandboxed agent could read ${team.exposed.join(", ")}. ${BUBBLEWRAP_ADVICE}; or set agent.sandbox: bubblewrap to require it, or team.allow_unsandboxed: true to accept that`,
      );
    if (this.warned) return;
    this.warned = true;
    this.log.warn(
      { evt: "agent.sandbox", state: "unavailable", reason, advice: BUBBLEWRAP_ADVICE },
      team
        ? `agent.sandbox is auto and ${reason}: agents run WITHOUT a sandbox, and can read ${team.exposed.join(", ")} (team.allow_unsandboxed: true)`
        : `agent.sandbox is auto and ${reason}: agents run WITHOUT a sandbox`,
    );
  }

  /** The effective settings for a channel: its overrides only count when stricter. */
  effective(ch: ChannelIsolation = {}): { sandboxed: boolean; network: SandboxNetwork } {
    const mode = ch.sandbox && SANDBOX_STRICTNESS[ch.sandbox] > SANDBOX_STRICTNESS[this.policy.mode] ? ch.sandbox : this.policy.mode;
    const network =
      ch.network && NETWORK_STRICTNESS[ch.network] > NETWORK_STRICTNESS[this.policy.network] ? ch.network : this.policy.network;
    if (mode === "off") return { sandboxed: false, network: "host" };
    const probe = this.probe;
    if (!probe.ok) {
      if (mode === "bubblewrap") throw new SandboxError(`agent.sandbox is bubblewrap but ${probe.reason}: ${BUBBLEWRAP_ADVICE}`);
      this.unsandboxedFallback(probe.reason);
      return { sandboxed: false, network: "host" };
    }
    if (network === "off") return { sandboxed: true, network: "none" };
    if (this.slirp.ok) return { sandboxed: true, network: "private" };
    // A network of its own is a layer on top of the sandbox, not the sandbox: without
    // slirp4netns the agent is still sandboxed, on the host's network (warned once).
    this.warnHostNetwork(this.slirp.reason);
    return { sandboxed: true, network: "host" };
  }

  /**
   * `effective()`, or undefined where the sandbox the config asks for cannot be had here
   * (its SandboxError is the start-up's, and doctor's sandbox line's, to report).
   */
  attainable(ch: ChannelIsolation = {}): { sandboxed: boolean; network: SandboxNetwork } | undefined {
    try {
      return this.effective(ch);
    } catch (err) {
      if (err instanceof SandboxError) return undefined;
      throw err;
    }
  }

  /** Processes with the same key are interchangeable: the warm spare serves any acquire with its key. */
  key(channel: ChannelRef, cwd: string, ch: ChannelIsolation = {}): string {
    const e = this.effective(ch);
    return e.sandboxed ? `bubblewrap:${e.network}:${cwd}:${channelDirName(channel)}` : "plain";
  }

  /** The launch of one process for a channel; undefined when it runs unsandboxed. */
  launch(o: {
    channel: ChannelRef;
    cwd: string;
    linkDir?: string;
    isolation?: ChannelIsolation;
    env: Record<string, string>;
    home?: string;
    command?: string;
    /** Where the process starts, when not the channel's working directory (an MCP server's own `cwd`). */
    chdir?: string;
    /** What `command` is, for the error when the sandbox would hide it; default "the agent command". */
    what?: string;
    /** Loopback ports inside a network of its own that lead to these sockets (bound in already), beside the policy's. */
    forward?: Array<{ port: number; socket: string }>;
  }): SandboxLaunch | undefined {
    const e = this.effective(o.isolation);
    if (!e.sandboxed) return undefined;
    // Made first: a state directory that does not exist yet could not be hidden.
    // Per channel id, like the cwd: two channels whose names slug alike never share a HOME.
    const home = o.home ?? join(this.policy.stateDir, "homes", channelDirName(o.channel));
    mkdirSync(home, { recursive: true, mode: 0o700 });
    const placeholder = ensurePlaceholder(join(this.policy.stateDir, "sandbox", "hidden"));
    const binds: SandboxBind[] = [
      ...(this.policy.install ? [{ path: this.policy.install, mode: "ro" as const }] : []),
      ...this.policy.binds,
    ];
    const hide = hiddenPaths(
      this.policy.hide,
      binds.map((b) => b.path),
    );
    // An agent installed under the state directory (e.g. ~/.local/bin when HOME is state_dir) would vanish inside.
    const exe = o.command ? resolveCommand(o.command, o.env.PATH ?? "") : undefined;
    const hiddenAt = exe ? hiddenBy(exe, hide, binds) : undefined;
    if (hiddenAt) {
      throw new SandboxError(
        `${o.what ?? "the agent command"} ${exe} is inside ${hiddenAt}, which the sandbox hides from agents: install it elsewhere (e.g. /usr/local or /opt), or add its directory to agent.sandbox_binds (mode: ro)`,
      );
    }
    const privateNet = e.network === "private" && this.slirp.ok ? this.slirp : undefined;
    const forwards = privateNet ? [...this.sockets, ...(o.forward ?? []).map((f) => [f.port, f.socket] as [number, string])] : [];
    const spec = { cwd: o.cwd, home, linkDir: o.linkDir, hide, placeholder, binds, chdir: o.chdir };
    const args = bubblewrapArgs({
      ...spec,
      network: e.network,
      resolvConf: privateNet ? this.resolvConf() : undefined,
      loopbackDir: privateNet && this.sockets.size ? this.relay?.dir : undefined,
    });
    // The host loopback ports it may reach are carried in by the sandbox's first process (loopback.ts).
    const init = forwards.length
      ? [process.execPath, cliPath(), "sandbox-exec", ...forwards.flatMap(([port, sock]) => ["--forward", `${port}=${sock}`]), "--"]
      : [];
    // A TMPDIR of the host would be read-only in here; the private /tmp is the agent's.
    const env: Record<string, string> = { HOME: home, ...(o.env.TMPDIR !== undefined ? { TMPDIR: "/tmp" } : {}) };
    return {
      command: this.policy.bwrap ?? "bwrap",
      args: [...args, ...init],
      env,
      home,
      ...(privateNet
        ? {
            network: { slirp4netns: privateNet.path, seccomp: privateNet.seccomp },
            hostNetworkArgs: bubblewrapArgs({ ...spec, network: "host" }),
          }
        : {}),
    };
  }

  /** The resolv.conf a private network's sandbox sees: slirp4netns's DNS forwarder. */
  private resolvConf(): string {
    const file = join(this.policy.stateDir, "sandbox", "resolv.conf");
    mkdirSync(join(this.policy.stateDir, "sandbox"), { recursive: true, mode: 0o700 });
    writeFileSync(file, `# written by buzz-bridge for sandboxed agents: slirp4netns answers DNS here\nnameserver ${SLIRP_DNS}\n`, {
      mode: 0o644,
    });
    return file;
  }
}
