/**
 * The deployment's policy lock (`policy.allowed_respond_to`, the Rust bridge's
 * `BUZZ_ACP_ALLOWED_RESPOND_TO`): every channel entry's effective `respond_to` must be one
 * of the permitted modes, or the config is refused — at start-up, on reload and by `check`.
 */
import type { Config } from "./schema.js";

export interface PolicyLockProblem {
  /** Where the offending mode is written: the channel's own key, else `defaults.respond_to`. */
  path: (string | number)[];
  message: string;
}

export function policyLockProblems(cfg: Config): PolicyLockProblem[] {
  const allowed = cfg.policy.allowed_respond_to;
  if (!allowed) return [];
  const list = allowed.join(", ");
  const problems: PolicyLockProblem[] = [];
  cfg.channels.forEach((ch, i) => {
    const own = ch.respond_to !== undefined;
    const mode = ch.respond_to ?? cfg.defaults.respond_to;
    if (allowed.includes(mode)) return;
    const name = ch.id === "*" ? 'channel "*" (every channel)' : `channel ${ch.id}`;
    problems.push({
      path: own ? ["channels", i, "respond_to"] : ["defaults", "respond_to"],
      message: `${name} answers respond_to: ${mode}${own ? "" : " (from defaults)"}, which policy.allowed_respond_to does not permit (allowed: ${list}); use one of those`,
    });
  });
  return problems;
}
