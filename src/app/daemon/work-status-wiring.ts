/**
 * The work status board (turn/work-status.ts) as the daemon builds it: snapshots go out
 * through the daemon's publisher like any publish (retried, queued behind replies), and
 * tool titles are redacted (title-redaction.ts: the state directory's paths, the secrets
 * this daemon holds) before anyone sees them.
 */
import type { Publisher } from "../../relay/publisher.js";
import type { RedactOptions } from "../../turn/redact-title.js";
import { WorkStatusBoard } from "../../turn/work-status.js";

export function workStatusBoard(publisher: Pick<Publisher, "send">, redact: RedactOptions): WorkStatusBoard {
  return new WorkStatusBoard({
    publish: (t) => void publisher.send(t).catch(() => undefined),
    redact,
  });
}
