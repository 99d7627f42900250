/**
 * How turns publish through the relay client: a reply or notice is signed, handed to
 * `beforePublish` (fleet mode records its id first), and published with the relay's
 * confirmation when its `OK` was lost (relay/confirm.ts); a failure is one warn line and
 * `null`. Signals (typing, reactions, presence) go out once and never fail a turn.
 */
import type { Event, EventTemplate } from "nostr-tools";
import type { Logger } from "../base/log.js";
import type { RelayClient } from "../relay/client.js";
import { isSuccess, type PublishStatus } from "../relay/outcome.js";
import type { TurnPublisher } from "./ports.js";

export function relayPublisher(
  relay: Pick<RelayClient, "sign" | "publishConfirmed" | "send">,
  o: { onOutcome: (status: PublishStatus) => void; logger: Logger },
): TurnPublisher {
  return {
    publish: async (t: EventTemplate, opts?: { beforePublish?(ev: Event): Promise<void> }) => {
      const event = relay.sign(t);
      await opts?.beforePublish?.(event);
      const outcome = await relay.publishConfirmed(event);
      o.onOutcome(outcome.status);
      if (isSuccess(outcome)) return event;
      o.logger.warn({ evt: "relay.publish_failed", kind: t.kind, status: outcome.status, reason: outcome.reason }, "publish failed");
      return null;
    },
    signal: (t: EventTemplate) => {
      void relay.send(t, { attempts: 1 }).then(
        (r) => o.onOutcome(r.outcome.status),
        () => undefined,
      );
    },
  };
}
