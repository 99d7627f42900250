/**
 * `buzz-bridge tail [-c FILE] [--channel ID]`: a channel read live — messages, reactions
 * and owner-command outcomes (kind 40099), names resolved — as the agent's identity sees
 * it. Without --channel, every channel the config listens in. Runs until SIGINT/SIGTERM.
 */
import { parseCommandArgs, UsageError, withUsage } from "../../base/args.js";
import { loadConfigOrReport, resolveConfigPath } from "../../config/load.js";
import { channelSelected } from "../../config/schema.js";
import { createLogger } from "../../base/log.js";
import { RelayClient } from "../../relay/index.js";
import { ChannelDirectory, ProfileCache } from "../../buzz/index.js";
import { refusalAdvice, waitAdmitted } from "../../relay/auth-advice.js";
import { followChannels } from "../../buzz/tail.js";

const HELP = `usage: buzz-bridge tail [-c FILE] [--channel ID]

Prints a channel's messages, reactions and owner-command outcomes (kind 40099) as they
arrive, with people and channels by name, authenticated as the config's identity.
Without --channel: every channel the config listens in. Ctrl-C stops.
Config: -c FILE, else $BUZZ_BRIDGE_CONFIG, else ./buzz-bridge.yaml.`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { config: { type: "string", short: "c" }, channel: { type: "string" } }, HELP);
    if (!args) return 0;
    const file = resolveConfigPath(args.values.config as string | undefined);
    const loaded = loadConfigOrReport(file);
    if (!loaded) return 1;
    const cfg = loaded.config;
    if (cfg.relay.url === "embedded")
      throw new UsageError(
        "tail: relay.url is `embedded`, a relay that lives inside the daemon; tail needs a relay it can connect to (ws:// or wss://)",
      );
    const wanted = (args.values.channel as string | undefined)?.toLowerCase();
    const client = new RelayClient({ url: cfg.relay.url, secretKey: loaded.secretKey, logger: createLogger({ level: "silent" }) });
    await client.start();
    try {
      const admitted = await waitAdmitted(client, 15_000);
      if (!admitted.ok) {
        process.stderr.write(
          admitted.refused !== undefined
            ? `tail: ${refusalAdvice(admitted.refused, loaded.pubkey)}\n`
            : `tail: no authenticated connection to ${cfg.relay.url} within 15 s; check relay.url and that the relay is running\n`,
        );
        return 2;
      }
      const all = await new ChannelDirectory(client).discover();
      const chosen = wanted ? all.filter((c) => c.id === wanted) : all.filter((c) => channelSelected(cfg, c.id));
      if (chosen.length === 0) {
        const known = all.map((c) => `#${c.name} ${c.id}`).join(", ") || "none";
        process.stderr.write(
          `tail: ${wanted ? `the identity is not a member of channel ${wanted}` : "the config selects none of the identity's channels"} (its channels: ${known})\n`,
        );
        return 1;
      }
      process.stderr.write(`following ${chosen.map((c) => `#${c.name} (${c.id})`).join(", ")} on ${cfg.relay.url}; Ctrl-C stops\n`);
      const profiles = new ProfileCache(client);
      const stop = new Promise<void>((resolve) => {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      });
      await followChannels(
        client,
        { channels: new Map(chosen.map((c) => [c.id, c.name])), names: (pks) => profiles.resolve(pks), out: process.stdout },
        stop,
      );
      return 0;
    } finally {
      client.stop();
    }
  });
}
