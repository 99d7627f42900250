/**
 * The stdio proxy (`buzz-bridge mcp-proxy`): the session's Aggregator (./aggregator.ts)
 * served on one stdio connection, the agent's end.
 * The daemon reaches this proxy over the link: built-in buzz tools go to it, and it asks
 * for merged hook runs.
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Logger } from "../base/log.js";
import type { LinkClient } from "../link/client.js";
import { fileReadingPort } from "./buzz-tool-listing.js";
import { Aggregator } from "./aggregator.js";
import type { Downstream } from "./downstream.js";
import type { ProxyManifest } from "./manifest.js";

export interface ProxyOptions {
  manifest: ProxyManifest;
  logger: Logger;
  /** The daemon link; without it the proxy has no buzz tools. */
  link?: LinkClient;
}

export class AggregatingProxy {
  readonly aggregator: Aggregator;

  constructor(opts: ProxyOptions) {
    const link = opts.link;
    this.aggregator = new Aggregator({
      manifest: opts.manifest,
      logger: opts.logger,
      buzz: link && fileReadingPort(link, opts.manifest.attachment_max_bytes),
      hookRan: link && ((r, hook) => link.hookRan(r, hook)),
    });
    opts.link?.onRunHook((p) => this.aggregator.runHook(p.name, p.servers, p.args));
  }

  get downstreams(): Downstream[] {
    return this.aggregator.downstreams;
  }

  /** Starts every downstream in parallel and serves upstream on `transport`. */
  async start(transport: Transport): Promise<void> {
    await this.aggregator.serve(transport);
  }

  stop(): Promise<void> {
    return this.aggregator.stop();
  }
}
