/**
 * A turn's publishing over the daemon's one publisher (relay/publisher.ts): a reply or
 * notice is signed, handed to `beforePublish` (fleet mode records its id first), and
 * published with the relay's confirmation when its `OK` was lost; a failure is one warn
 * line and `null`. Signals (typing, reactions) go out once and never fail a turn.
 */
import type { Event, EventTemplate } from "nostr-tools";
import type { Logger } from "../base/log.js";
import type { Publisher } from "../relay/publisher.js";
import { isSuccess } from "../relay/outcome.js";
import type { TurnPublisher } from "./ports.js";

export function turnPublisher(publisher: Pick<Publisher, "send">, logger: Logger): TurnPublisher {
  return {
    publish: async (t: EventTemplate, opts?: { beforePublish?(ev: Event): Promise<void> }) => {
      const { event, outcome } = await publisher.send(t, { beforePublish: opts?.beforePublish });
      if (isSuccess(outcome)) return event;
      logger.warn({ evt: "relay.publish_failed", kind: t.kind, status: outcome.status, reason: outcome.reason }, "publish failed");
      return null;
    },
    signal: (t: EventTemplate) => void publisher.send(t, { once: true }).catch(() => undefined),
  };
}
