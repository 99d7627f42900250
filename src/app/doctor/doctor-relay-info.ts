/**
 * `doctor`'s "relay info" row: the relay's NIP-11 document as the daemon will read it (its
 * key, NIPs, limits and connection lifetime), and what is wrong with it. A relay without a
 * usable document still works on Buzz's defaults, so that is a warning, not a failure;
 * `workflows.wake: true` on a relay that states no key is a failure (no wake could ever pass).
 */
import type { Config } from "../../config/schema.js";
import { RelayInfoSource } from "../../relay/nip11.js";
import { describeRelayInfo } from "../daemon/relay-info.js";
import type { CheckResult } from "./doctor-result.js";

export async function relayInfoCheck(url: string, cfg: Config, timeoutMs: number): Promise<CheckResult> {
  const source = new RelayInfoSource({ url, timeoutMs });
  const info = await source.refresh();
  const configured = { frames: cfg.relay.frame_quota.frames, windowMs: cfg.relay.frame_quota.window };
  const stated = info.limits.frameQuota;
  const strict = stated && stated.frames / stated.windowMs < configured.frames / configured.windowMs ? stated : configured;
  const share = cfg.relay.frame_quota.share;
  const view = describeRelayInfo({
    info,
    frameQuota: { frames: Math.max(1, Math.floor(strict.frames * share)), windowMs: strict.windowMs },
    connectionLifetimeMs: info.limits.maxConnectionLifetimeMs,
  });
  const details = [
    `key (self): ${view.self ?? "none"}`,
    `NIPs: ${view.nips.join(", ") || "not stated"}`,
    `limits: ${view.limits}`,
    ...view.problems.map((p) => `warning: ${p}`),
  ];
  if (cfg.workflows.wake && !info.self)
    return {
      name: "relay info",
      mark: "fail",
      summary:
        "workflows.wake is on, but the relay's NIP-11 document states no signing key (self): no workflow could wake the agent; turn workflows.wake off or fix the relay",
      details,
    };
  const summary =
    info.source === "defaults"
      ? "no usable NIP-11 document: working with Buzz's default limits, and workflow wakes are refused"
      : `NIP-11: key ${view.self ? `${view.self.slice(0, 12)}…` : "not stated"}, ${info.limits.maxConnectionLifetimeMs === undefined ? "no connection lifetime" : `connections live ${info.limits.maxConnectionLifetimeMs / 1000}s`}${view.problems.length ? `; ${view.problems.length} problem${view.problems.length === 1 ? "" : "s"} (defaults used for those)` : ""}`;
  return { name: "relay info", mark: "ok", summary, details };
}
