/**
 * A heartbeat turn: the heartbeat's text prompted in the channel's heartbeat session (its
 * own, apart from every thread's). Nothing is queued or retried, there are no reactions or
 * typing (no mention to react to) and no fallback reply: a heartbeat with nothing to do
 * stays silent. What the agent posts lands top-level in the channel.
 */
import type { TurnUsage } from "../agent/index.js";
import type { Logger } from "../base/log.js";
import type { Config } from "../config/schema.js";
import { policyFor } from "../config/schema.js";
import { heartbeatBlocks } from "../prompt/heartbeat.js";
import type { StandingInput } from "../prompt/index.js";
import type { ChannelInfo } from "../buzz/directory.js";
import { InflightPublishes } from "./inflight.js";
import type { TurnOutcome } from "./run.js";
import type { RunningEntry } from "./running.js";
import { spentBudget, type ScopeSessions } from "./sessions.js";

/** The scope of a channel's heartbeat session. */
export const heartbeatScope = (channelId: string) => `heartbeat:${channelId}`;

export interface HeartbeatTurnDeps {
  config: () => Config;
  sessions: ScopeSessions;
  channel(id: string): ChannelInfo | undefined | Promise<ChannelInfo | undefined>;
  /** The standing context of a session in `channel`, as a mention's turn has it. */
  standing(cfg: Config, channel: ChannelInfo, teamInstructions: string): Promise<StandingInput>;
  onUsage?(channel: string, model: string | undefined, usage: TurnUsage): void;
  logger: Logger;
}

/** Runs the heartbeat turn registered as `running`; "no-channel" when the bridge is not in the channel. */
export async function runHeartbeat(
  d: HeartbeatTurnDeps,
  running: RunningEntry,
  channelId: string,
  text: string,
): Promise<TurnOutcome["status"] | "no-channel"> {
  const started = Date.now();
  const key = heartbeatScope(channelId);
  const signal = running.abort.signal;
  const log = d.logger.child({ scope: key, heartbeat: true });
  const channel = await d.channel(channelId);
  if (!channel) {
    log.warn(
      { evt: "turn.end", status: "failed", reason: `the bridge is not a member of heartbeat.channel ${channelId}` },
      "heartbeat channel unknown",
    );
    return "no-channel";
  }
  const cfg = d.config();
  const policy = policyFor(cfg, channel.id);
  const standing = await d.standing(cfg, channel, policy.team_instructions);
  const published = new Set<string>();
  let rotateFor: string | undefined;
  let status: TurnOutcome["status"];
  let reason: string | undefined;
  try {
    const ss = await d.sessions.open({ key }, channel, standing, log);
    running.session = ss.session;
    const inflight = new InflightPublishes();
    const over = AbortSignal.any([signal, AbortSignal.timeout(cfg.agent.max_turn)]);
    const messages = { sent: 0, max: cfg.replies.max_per_turn };
    ss.current = { turnId: running.info.turnId, published, anchor: "", inflight, over, messages, stopped: signal };
    try {
      const r = await ss.session.prompt(heartbeatBlocks(ss.prompt, standing, text));
      if (r.turnUsage) d.onUsage?.(channel.id, ss.session.model, r.turnUsage);
      rotateFor = d.sessions.turnDone(ss, spentBudget(r.stopReason), cfg.agent.max_turns_per_session);
      await inflight.settled();
      status = signal.aborted || r.stopReason === "cancelled" ? "cancelled" : r.timedOut ? "failed" : "answered";
      if (r.timedOut) reason = r.timedOut === "idle" ? "idle timeout" : "max_turn";
    } finally {
      ss.current = undefined;
      ss.session.unhold();
    }
  } catch (err) {
    status = signal.aborted ? "cancelled" : "failed";
    reason = err instanceof Error ? err.message : String(err);
    await d.sessions.rotate((k) => k === key);
  }
  // The heartbeat session rotates by the same rules as a scope's.
  await d.sessions.rotateIfDue(key, rotateFor);
  // Not in turns_total: that counts mentions' turns; heartbeats have their own metric.
  log.info({ evt: "turn.end", status, reason, published: published.size, seconds: (Date.now() - started) / 1000 }, "heartbeat turn ended");
  return status;
}
