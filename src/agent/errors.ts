/**
 * Failure domains of the agent runner. Each message names the agent command and says
 * what went wrong in words an operator can act on; the turn module posts them (short
 * form) in the thread and the log keeps the details.
 */
import type { ProviderError } from "./provider-error.js";

/** The agent could not be started or did not complete the ACP handshake. */
export class AgentStartError extends Error {
  override name = "AgentStartError";
  constructor(
    /** The command as configured (`agent.command` plus args), for the message. */
    readonly command: string,
    /** What went wrong, e.g. "command not found", "exited at once (code 1)". */
    readonly reason: string,
    /** The last stderr lines of the process, scrubbed; may be empty. */
    readonly stderrTail = "",
  ) {
    super(`agent '${command}' failed to start: ${reason}${stderrTail ? `\n--- agent stderr (last lines) ---\n${stderrTail}` : ""}`);
  }
}

/** `agent.mode` names a session mode the agent does not offer. */
export class AgentModeError extends AgentStartError {
  override name = "AgentModeError";
  constructor(
    command: string,
    readonly mode: string,
    readonly available: string[],
  ) {
    super(
      command,
      available.length
        ? `agent.mode '${mode}' is not offered by the agent (it offers: ${available.join(", ")})`
        : `agent.mode '${mode}' is set but the agent offers no session modes; remove agent.mode`,
    );
  }
}

/** `agent.model` / `agent.effort` names a value the agent does not offer for the session. */
export class AgentSettingError extends AgentStartError {
  override name = "AgentSettingError";
  constructor(
    command: string,
    readonly key: string,
    readonly value: string,
    readonly available: string[],
    what: string,
  ) {
    super(
      command,
      available.length
        ? `${key} '${value}' is not offered by the agent (it offers: ${available.join(", ")})`
        : `${key} '${value}' is set but the agent offers no ${what} to choose from; remove ${key}`,
    );
  }
}

/** The agent process died while it was serving a session (possibly mid-turn). */
export class AgentCrashedError extends Error {
  override name = "AgentCrashedError";
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly stderrTail = "",
  ) {
    const how = signal ? `was killed by ${signal}` : `exited with code ${exitCode}`;
    super(`agent '${command}' ${how} during the turn${stderrTail ? `\n--- agent stderr (last lines) ---\n${stderrTail}` : ""}`);
  }
}

/**
 * Too many crashes in a short time: the pool refuses to start agents for a while. When no
 * process ever got through start-up, that is what the message says ("never started", with
 * the last start failure), not "crashed": a missing API key or a bad argument is a setup
 * problem, not a flaky agent. When agents did start before but the failures that opened it
 * are all failures to start, it says that ("failed to start N times in a row", with the
 * last), not "crashed": what broke is the start (a sandbox, a command, its files).
 */
export class CircuitOpenError extends Error {
  override name = "CircuitOpenError";
  constructor(
    readonly command: string,
    readonly until: number,
    readonly crashes: number,
    readonly history: { neverStarted?: boolean; onlyStartFailures?: boolean; lastStartFailure?: string } = {},
  ) {
    const until_ = `not trying again until ${new Date(until).toISOString().slice(11, 19)} UTC (circuit breaker open)`;
    const last = history.lastStartFailure ? `the last: ${history.lastStartFailure}` : undefined;
    super(
      history.neverStarted
        ? `agent '${command}' never started (${crashes} attempts${last ? `, ${last}` : ""}); ${until_}`
        : history.onlyStartFailures
          ? `agent '${command}' failed to start ${crashes} times in a row${last ? ` (${last})` : ""}; ${until_}`
          : `agent '${command}' crashed ${crashes} times in a short time; ${until_}`,
    );
  }
}

/** A session-level ACP request (session/new, set_mode, prompt) was refused by the agent. */
export class AgentProtocolError extends Error {
  override name = "AgentProtocolError";
  /** For a refused prompt: the model provider's failure the agent reported, by class (./provider-error.ts). */
  provider?: ProviderError;
  constructor(
    readonly command: string,
    readonly step: string,
    cause: unknown,
  ) {
    super(`agent '${command}' refused ${step}: ${describeCause(cause)}`, { cause });
  }
}

/** The pool is closed; no more sessions. */
export class PoolClosedError extends Error {
  override name = "PoolClosedError";
  constructor() {
    super("agent pool is closed (the daemon is shutting down)");
  }
}

export function describeCause(cause: unknown): string {
  if (cause && typeof cause === "object") {
    const c = cause as { message?: unknown; code?: unknown; data?: unknown };
    const msg = typeof c.message === "string" ? c.message : String(cause);
    const details =
      c.data && typeof c.data === "object" && "details" in c.data ? ` (${String((c.data as { details: unknown }).details)})` : "";
    return typeof c.code === "number" ? `${msg} [${c.code}]${details}` : `${msg}${details}`;
  }
  return String(cause);
}

/** A prompt was sent to a session that is still running a turn (the queue allows one per scope). */
export class TurnInProgressError extends Error {
  override name = "TurnInProgressError";
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} is already running a turn; wait for it or cancel it first`);
  }
}
