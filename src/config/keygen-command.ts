/**
 * `buzz-bridge keygen [--out FILE]`: a new agent keypair. Prints the npub and hex pubkey;
 * the nsec goes to FILE (created 0600, never overwriting) or, without --out, to stdout.
 */
import { openSync, writeSync, closeSync } from "node:fs";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { parseCommandArgs, withUsage } from "../ops/args.js";

const HELP = `usage: buzz-bridge keygen [--out FILE]

Generates a new keypair for the agent. Prints its npub and hex public key.
With --out, the nsec is written to FILE with mode 0600 (an existing FILE is never
overwritten); without it, the nsec is printed too.`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { out: { type: "string", short: "o" } }, HELP);
    if (!args) return 0;
    const sk = generateSecretKey();
    const pk = getPublicKey(sk);
    const nsec = nip19.nsecEncode(sk);
    const out = args.values.out as string | undefined;
    if (out) {
      let fd: number;
      try {
        fd = openSync(out, "wx", 0o600); // wx: fail if it exists
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        process.stderr.write(`buzz-bridge keygen: cannot create ${out}: ${code === "EEXIST" ? "file exists (refusing to overwrite a key)" : code}\n`);
        return 1;
      }
      writeSync(fd, `${nsec}\n`);
      closeSync(fd);
    }
    const last = out ? `nsec written to ${out} (mode 0600)` : `nsec: ${nsec}`;
    process.stdout.write(`npub: ${nip19.npubEncode(pk)}\nhex:  ${pk}\n${last}\n`);
    return 0;
  });
}
