/**
 * `buzz-bridge register --owner-key FILE -c CONFIG`: the owner publishes, signed with the
 * owner's key, the kind 30177 record of each agent the config runs (`d` = the agent's hex
 * key; `name`, `respond_to`, `respond_to_allowlist`, `parallelism`). Release builds of Buzz
 * Desktop offer an agent only through it, and only while the agent's profile carries this
 * owner's NIP-OA tag (docs/protocol.md "Buzz Desktop"). Refused before anything is
 * published: the agent's own key, a key that is not the configured owner, a config naming
 * no owner.
 */
import { finalizeEvent } from "nostr-tools";
import { parseCommandArgs, UsageError, withUsage } from "../../base/args.js";
import { createLogger } from "../../base/log.js";
import { npub } from "../../config/keys.js";
import { loadTeamOrReport, resolveConfigPath, type LoadedConfig } from "../../config/load.js";
import { managedAgentRecord } from "../../nostr/agent-records.js";
import { configuredDisplayName, directoryAudience } from "../../buzz/agent-records.js";
import { RelayClient } from "../../relay/index.js";
import { isSuccess } from "../../relay/outcome.js";
import { waitAdmitted, refusalAdvice } from "../../relay/auth-advice.js";
import { readOwnerKey } from "./owner-key.js";

const HELP = `usage: buzz-bridge register --owner-key FILE [-c CONFIG]

Publishes, signed with the owner's key, the managed agent record (kind 30177) of each agent
CONFIG runs, so release builds of Buzz Desktop offer it in the @-picker. The agent's profile
must carry the same owner's NIP-OA tag (buzz-bridge attest, identity.auth_tag).
  --owner-key FILE   the owner's nsec (or hex); read, used, never stored or printed
  -c, --config FILE  the config (default $BUZZ_BRIDGE_CONFIG, else ./buzz-bridge.yaml)`;

/** Why this owner key may not register this agent, or undefined. */
export function registerRefusal(m: LoadedConfig, ownerPubkey: string): string | undefined {
  const owner = m.config.identity.owner;
  if (ownerPubkey === m.pubkey) return `the key given is the agent's own key (${npub(m.pubkey)}); register is run with the owner's key`;
  if (!owner) return `the config names no owner for agent ${npub(m.pubkey)}: set identity.owner (or identity.auth_tag)`;
  if (owner !== ownerPubkey)
    return `the key given (${npub(ownerPubkey)}) is not the owner the config names for agent ${npub(m.pubkey)} (${npub(owner)})`;
  if (m.config.relay.url === "embedded")
    return "relay.url is embedded: register publishes to the relay the agent uses; run it against that relay's URL";
  return undefined;
}

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { "owner-key": { type: "string" }, config: { type: "string", short: "c" } }, HELP);
    if (!args) return 0;
    const owner = readOwnerKey(args.values["owner-key"] as string | undefined, HELP);
    const team = loadTeamOrReport(resolveConfigPath(args.values.config as string | undefined));
    if (!team) return 1;
    for (const m of team.members) {
      const refusal = registerRefusal(m, owner.pubkey);
      if (refusal) throw new UsageError(`register: refused: ${refusal}`);
    }
    const clients = new Map<string, RelayClient>();
    try {
      for (const m of team.members) {
        const cfg = m.config;
        let client = clients.get(cfg.relay.url);
        if (!client) {
          client = new RelayClient({ url: cfg.relay.url, secretKey: owner.secret, logger: createLogger({ level: "silent" }) });
          clients.set(cfg.relay.url, client);
          await client.start();
          const admitted = await waitAdmitted(client, 15_000);
          if (!admitted.ok) {
            process.stderr.write(
              `register: ${admitted.refused !== undefined ? refusalAdvice(admitted.refused, owner.pubkey) : `no authenticated connection to ${cfg.relay.url} within 15 s`}\n`,
            );
            return 2;
          }
        }
        const audience = directoryAudience(
          cfg,
          cfg.channels.map((c) => ({ id: c.id, type: "stream" as const })),
          cfg.identity.owner,
        );
        const tpl = managedAgentRecord(m.pubkey, {
          name: configuredDisplayName(cfg, m.team?.id),
          respond_to: audience.respond_to,
          respond_to_allowlist: audience.respond_to_allowlist,
          parallelism: cfg.agent.max_concurrent,
        });
        const ev = finalizeEvent(tpl, owner.secret);
        const outcome = await client.publish(ev);
        if (!isSuccess(outcome)) {
          process.stderr.write(`register: the relay refused the record of ${npub(m.pubkey)}: ${outcome.status} ${outcome.reason ?? ""}\n`);
          return 2;
        }
        if (!m.authTag)
          process.stderr.write(
            `note: ${npub(m.pubkey)} has no identity.auth_tag: Desktop trusts this record only once the agent's profile carries the owner's tag (buzz-bridge attest)\n`,
          );
        process.stdout.write(`${ev.id} 30177 d=${m.pubkey} ${npub(m.pubkey)}\n`);
      }
      return 0;
    } finally {
      for (const c of clients.values()) c.stop();
    }
  });
}
