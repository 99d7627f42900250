/**
 * The work status board (turn/work-status.ts) as the daemon builds it: snapshots go to the
 * relay like any publish (retried, queued behind replies), and tool titles are redacted
 * (title-redaction.ts: the state directory's paths, the secrets this daemon holds) before
 * anyone sees them.
 */
import type { RelayClient } from "../../relay/client.js";
import type { PublishStatus } from "../../relay/outcome.js";
import type { RedactOptions } from "../../turn/redact-title.js";
import { WorkStatusBoard } from "../../turn/work-status.js";

export function workStatusBoard(
  relay: Pick<RelayClient, "send">,
  redact: RedactOptions,
  onOutcome: (status: PublishStatus) => void,
): WorkStatusBoard {
  return new WorkStatusBoard({
    publish: (t) =>
      void relay.send(t).then(
        (r) => onOutcome(r.outcome.status),
        () => undefined,
      ),
    redact,
  });
}
