/**
 * `buzz-bridge attest --owner-key FILE [--conditions C] AGENT_NPUB`: the NIP-OA `auth` tag by
 * which the owner vouches for the agent's key (docs/protocol.md "Buzz Desktop"), printed as
 * the JSON `identity.auth_tag` takes. Run by the owner; the tag is checked before it is printed.
 */
import { parseCommandArgs, UsageError, withUsage } from "../../base/args.js";
import { KeyError, npub, parsePubkey } from "../../config/keys.js";
import { parseAuthTag, signAttestation, verifyAttestation } from "../../config/nip-oa.js";
import { readOwnerKey } from "./owner-key.js";

const HELP = `usage: buzz-bridge attest --owner-key FILE [--conditions C] AGENT_NPUB

Prints the NIP-OA auth tag the owner signs for the agent AGENT_NPUB (npub or hex), as JSON
for identity.auth_tag (or a file for identity.auth_tag_file). With it the agent's profile
names its owner, which Buzz Desktop needs to trust the owner's record (buzz-bridge register).
  --owner-key FILE   the owner's nsec (or hex); read, used, never stored or printed
  --conditions C     NIP-OA conditions, e.g. created_at<1798761600 (default: none)`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { "owner-key": { type: "string" }, conditions: { type: "string" } }, HELP, true);
    if (!args) return 0;
    if (args.positionals.length !== 1) throw new UsageError(`give exactly one AGENT_NPUB\n\n${HELP}`);
    let agent: string;
    try {
      agent = parsePubkey(args.positionals[0]!);
    } catch (err) {
      throw new UsageError(`AGENT_NPUB: ${err instanceof KeyError ? err.message : String(err)}`);
    }
    const owner = readOwnerKey(args.values["owner-key"] as string | undefined, HELP);
    if (owner.pubkey === agent)
      throw new UsageError(`the owner key is the agent's own key (${npub(agent)}): an agent cannot vouch for itself; use the owner's key`);
    const conditions = (args.values.conditions as string | undefined) ?? "";
    const parsed = parseAuthTag(signAttestation(owner.secret, agent, conditions));
    if (!parsed.ok) throw new UsageError(`--conditions: ${parsed.problem}`);
    const verified = verifyAttestation(parsed.value, agent);
    if (!verified.ok) throw new Error(`the tag made does not verify: ${verified.problem}`);
    process.stdout.write(`${JSON.stringify(["auth", parsed.value.owner, parsed.value.conditions, parsed.value.sig])}\n`);
    process.stderr.write(`owner ${npub(owner.pubkey)} vouches for agent ${npub(agent)}\n`);
    return 0;
  });
}
