/**
 * `buzz-bridge post`: posts one kind 9 message as a given key, for trying the demo (or a
 * dev relay) by hand. Authenticates with NIP-42 like any Buzz client.
 */
import * as nip19 from "nostr-tools/nip19";
import { parsePubkey, parseSecretKey } from "../../config/keys.js";
import { parseCommandArgs, withUsage, UsageError } from "../../base/args.js";
import { createLogger } from "../../base/log.js";
import { message, replyRefFor } from "../../nostr/events.js";
import { RelayClient } from "../../relay/index.js";
import { isMembershipRefusal, refusalAdvice, waitAdmitted } from "../../relay/auth-advice.js";

const HELP = `usage: buzz-bridge post --relay URL --nsec NSEC --channel ID [--mention NPUB]… [--reply-to EVENT_ID] TEXT

Posts TEXT as a kind 9 message in the channel, signed with NSEC (nsec1… or hex; or the
environment variable BUZZ_POST_NSEC). --mention p-tags a person or agent (repeatable);
--reply-to posts in that event's thread. Prints the event id.`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(
      argv,
      {
        relay: { type: "string" },
        nsec: { type: "string" },
        channel: { type: "string" },
        mention: { type: "string", multiple: true },
        "reply-to": { type: "string" },
      },
      HELP,
      true,
    );
    if (!args) return 0;
    const v = args.values as Record<string, string | string[] | undefined>;
    const nsec = (v.nsec as string | undefined) ?? process.env.BUZZ_POST_NSEC;
    if (!v.relay || !nsec || !v.channel || args.positionals.length === 0)
      throw new UsageError(`--relay, --nsec, --channel and TEXT are required\n\n${HELP}`);
    let secret: Uint8Array;
    let mentions: string[];
    try {
      secret = parseSecretKey(nsec);
      mentions = ((v.mention as string[] | undefined) ?? []).map(parsePubkey);
    } catch (err) {
      throw new UsageError(`${(err as Error).message}\n\n${HELP}`);
    }
    const client = new RelayClient({ url: v.relay as string, secretKey: secret, logger: createLogger({ level: "silent" }) });
    try {
      await client.start();
      const admitted = await waitAdmitted(client, 15_000);
      if (!admitted.ok) {
        process.stderr.write(
          admitted.refused !== undefined
            ? `post: ${refusalAdvice(admitted.refused, client.pubkey)}\n`
            : `post: no authenticated connection to ${String(v.relay)} within 15 s; check --relay and that the relay is running\n`,
        );
        return 2;
      }
      let thread;
      if (v["reply-to"]) {
        const [parent] = await client.query([{ ids: [v["reply-to"] as string], limit: 1 }]);
        if (!parent) {
          process.stderr.write(`post: event ${v["reply-to"]} not found on the relay\n`);
          return 1;
        }
        thread = replyRefFor(parent);
      }
      const { event, outcome } = await client.send(message(v.channel as string, args.positionals.join(" "), { mentions, thread }));
      if (outcome.status !== "accepted" && outcome.status !== "duplicate") {
        const advice =
          outcome.reason && isMembershipRefusal(outcome.reason)
            ? `: ${refusalAdvice(outcome.reason, client.pubkey, "publish")}`
            : `: ${outcome.status}${outcome.reason ? ` (${outcome.reason})` : ""}`;
        process.stderr.write(`post: the relay refused the message${advice}\n`);
        return 2;
      }
      process.stdout.write(`${event.id}\n`);
      process.stderr.write(`posted as ${nip19.npubEncode(client.pubkey)}\n`);
      return 0;
    } finally {
      client.stop();
    }
  });
}
