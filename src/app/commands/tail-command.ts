/**
 * `buzz-bridge tail [-c FILE] [--channel NAME|ID] [--agent ID]`: a channel read live — messages,
 * reactions and owner-command outcomes (kind 40099), names resolved — as the agent's
 * identity sees it. Without --channel, every channel the config listens in, following the
 * identity's joins and leaves. Runs until SIGINT/SIGTERM.
 */
import { parseCommandArgs, UsageError, withUsage } from "../../base/args.js";
import { loadMemberOrReport, resolveConfigPath } from "../../config/load.js";
import { channelSelected } from "../../config/schema.js";
import { createLogger } from "../../base/log.js";
import { RelayClient } from "../../relay/index.js";
import { ChannelDirectory, ProfileCache, type ChannelInfo } from "../../buzz/index.js";
import { refusalAdvice, waitAdmitted } from "../../relay/auth-advice.js";
import { followChannels } from "../../buzz/tail.js";

const HELP = `usage: buzz-bridge tail [-c FILE] [--channel NAME|ID] [--agent ID]

Prints a channel's messages, reactions and owner-command outcomes (kind 40099) as they
arrive, authenticated as the config's identity. Channels are shown by name, people by the
name in their profile (kind 0), or a short npub when they have none.
--channel: one channel, by name (general or #general) or UUID. Without it: every channel
the config listens in, and channels the identity is added to later (removals are shown too).
--agent: with a config of several agents (agents:), the one to read as: its id (the first 16
hex digits of its pubkey, as \`check\` prints it), npub or hex pubkey.
Ctrl-C stops. Config: -c FILE, else $BUZZ_BRIDGE_CONFIG, else ./buzz-bridge.yaml.`;

/** The channel `--channel` names: its UUID, or its name with or without `#`; a name shared by several channels is refused. */
export function channelByArg(arg: string, all: ChannelInfo[]): { channel: ChannelInfo } | { problem: string } {
  const wanted = arg.trim();
  const known = all.map((c) => `#${c.name} (${c.id})`).join(", ") || "none";
  const byId = all.find((c) => c.id === wanted.toLowerCase());
  if (byId) return { channel: byId };
  const name = wanted.replace(/^#/, "");
  const byName = all.filter((c) => c.name === name);
  if (byName.length === 1) return { channel: byName[0]! };
  if (byName.length > 1)
    return {
      problem: `${byName.length} channels are named #${name}: give one's UUID with --channel (${byName.map((c) => c.id).join(", ")})`,
    };
  return { problem: `the identity is not a member of a channel named or with UUID '${wanted}' (its channels: ${known})` };
}

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(
      argv,
      { config: { type: "string", short: "c" }, channel: { type: "string" }, agent: { type: "string" } },
      HELP,
    );
    if (!args) return 0;
    const file = resolveConfigPath(args.values.config as string | undefined);
    const loaded = loadMemberOrReport(file, args.values.agent as string | undefined);
    if (!loaded) return 1;
    const cfg = loaded.config;
    if (cfg.relay.url === "embedded")
      throw new UsageError(
        "tail: relay.url is `embedded`, a relay that lives inside the daemon; tail needs a relay it can connect to (ws:// or wss://)",
      );
    const wanted = args.values.channel as string | undefined;
    const client = new RelayClient({ url: cfg.relay.url, secretKey: loaded.secretKey, logger: createLogger({ level: "silent" }) });
    await client.start();
    const directory = new ChannelDirectory(client).attach();
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
      const all = await directory.discover();
      let select: (ch: ChannelInfo) => boolean;
      if (wanted !== undefined) {
        const found = channelByArg(wanted, all);
        if ("problem" in found) {
          process.stderr.write(`tail: ${found.problem}\n`);
          return 1;
        }
        select = (ch) => ch.id === found.channel.id;
      } else select = (ch) => channelSelected(cfg, ch.id);
      const chosen = all.filter(select);
      if (chosen.length === 0) {
        const known = all.map((c) => `#${c.name} (${c.id})`).join(", ") || "none";
        process.stderr.write(`tail: the config selects none of the identity's channels (its channels: ${known})\n`);
        return 1;
      }
      // Ctrl-C is taken before the line that offers it: a stop right after it still ends with 0.
      const stop = new Promise<void>((resolve) => {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      });
      process.stderr.write(
        `following ${chosen.map((c) => `#${c.name} (${c.id})`).join(", ")} on ${cfg.relay.url}${wanted === undefined ? ", and channels the identity is added to" : ""}; Ctrl-C stops\n`,
      );
      const profiles = new ProfileCache(client);
      await followChannels(
        client,
        {
          channels: new Map(chosen.map((c) => [c.id, c.name])),
          names: (pks) => profiles.resolve(pks),
          out: process.stdout,
          follow: { directory, select },
        },
        stop,
      );
      return 0;
    } finally {
      directory.detach();
      client.stop();
    }
  });
}
