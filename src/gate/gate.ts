/**
 * The gate as the daemon calls it: decide, then make the decision visible (log line,
 * on_denied answer) or execute the control command. Accepted events are returned for
 * the caller to hand to the queue, which writes them durably before anything else.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../ops/log.js";
import { decide, type Decision, type GateContext } from "./decide.js";
import { DeniedReporter } from "./denied.js";
import { ControlExecutor } from "./control.js";

export interface GateOptions {
  context: GateContext;
  reporter: DeniedReporter;
  control: ControlExecutor;
  logger: Logger;
  /**
   * Claims a control command's event id durably; false when it was already executed. A
   * `!shutdown` replayed after a restart (the relay resends since the cursor) must not
   * shut the daemon down again.
   */
  claimControl(eventId: string, createdAt: number): boolean;
}

export class Gate {
  constructor(private readonly opts: GateOptions) {}

  /** Decides and performs the decision's side effects; returns the decision. */
  async handle(ev: Event): Promise<Decision> {
    const decision = decide(ev, this.opts.context);
    if (decision.action === "accept") return decision;
    if (decision.action === "control") {
      if (!this.opts.claimControl(ev.id, ev.created_at)) {
        this.opts.logger.debug({ evt: "gate.control_replayed", event: ev.id, command: decision.command });
        return decision;
      }
      await this.opts.control.execute(ev, decision.command, decision.channel.id);
      return decision;
    }
    await this.opts.reporter.report(ev, decision);
    return decision;
  }
}
