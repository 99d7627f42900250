/**
 * The ACP SDK, loaded with the first agent process instead of with the daemon. Its module
 * builds every schema of the protocol with zod when it loads: about 8.5 MiB of RSS, a twelfth
 * of an idle daemon (bench/README.md, figure 7). A daemon at idle often runs no agent at all:
 * with the sandbox on, the warm spare waits for the channel it will serve (agent/pool.ts).
 *
 * `AgentProcess.start` awaits `loadAcpSdk()` before it spawns anything; everything else that
 * speaks ACP holds an `AgentProcess`, so it runs after that and reads the SDK with `acpSdk()`.
 * Types come from `import type`, which loads nothing.
 */
import type * as Acp from "@agentclientprotocol/sdk/unstable";

export type AcpSdk = typeof Acp;

let loaded: AcpSdk | undefined;
let loading: Promise<AcpSdk> | undefined;

/** Loads the SDK once; later calls return the same module. */
export function loadAcpSdk(): Promise<AcpSdk> {
  loading ??= import("@agentclientprotocol/sdk/unstable").then((sdk) => (loaded = sdk));
  return loading;
}

/** The SDK, for code that runs on a started agent process (which loaded it). */
export function acpSdk(): AcpSdk {
  if (!loaded) throw new Error("the ACP SDK is used before an agent process was started (agent/acp-sdk.ts)");
  return loaded;
}
