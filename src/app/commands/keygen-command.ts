/**
 * `buzz-bridge keygen [--out FILE] [--owner USER[:GROUP]] [--mode 0600|0400]`: a new agent
 * keypair. Prints the npub and hex pubkey; the nsec goes to FILE (created with the mode,
 * never overwriting) or, without --out, to stdout. `--owner` hands the file to the service
 * user at creation (run as root), so the key is never readable by anyone else on the way:
 * the daemon refuses a key file that group or others can read.
 */
import { closeSync, fchownSync, openSync, rmSync, writeSync } from "node:fs";
import { spawnSync } from "node:child_process";
import * as nip19 from "nostr-tools/nip19";
import { generateSecretKey } from "nostr-tools/pure";
import { parseCommandArgs, UsageError, withUsage } from "../../base/args.js";
import { pubkeyOf } from "../../config/keys.js";

const HELP = `usage: buzz-bridge keygen [--out FILE] [--owner USER[:GROUP]] [--mode 0600|0400]

Generates a new keypair for the agent. Prints its npub and hex public key.
With --out, the nsec is written to FILE with mode 0600 (an existing FILE is never
overwritten); without it, the nsec is printed too.
  --owner USER[:GROUP]  owner of FILE (names or numeric ids; needs root), e.g. the service
                        user: --owner buzz-bridge (systemd unit) or --owner 10001:10001 (the image)
  --mode 0600|0400      FILE's mode; the daemon refuses a key group or others can read`;

const MODES: Record<string, number> = { "0600": 0o600, "600": 0o600, "0400": 0o400, "400": 0o400 };

/** `name` or numeric id → id, through the system's user/group database (getent). */
function lookup(db: "passwd" | "group", name: string): number {
  if (/^\d+$/.test(name)) return Number(name);
  const r = spawnSync("getent", [db, name], { encoding: "utf8" });
  const id = r.status === 0 ? Number(r.stdout.split(":")[2]) : NaN;
  if (!Number.isInteger(id))
    throw new UsageError(
      `--owner: no ${db === "passwd" ? "user" : "group"} '${name}' on this system (create it first, e.g. useradd --system ${name})`,
    );
  return id;
}

export function parseOwner(spec: string): { uid: number; gid: number } {
  const [user, group] = spec.split(":");
  if (!user) throw new UsageError("--owner: give USER or USER:GROUP");
  const uid = lookup("passwd", user);
  if (group) return { uid, gid: lookup("group", group) };
  if (/^\d+$/.test(user)) return { uid, gid: uid };
  const r = spawnSync("id", ["-g", user], { encoding: "utf8" });
  return { uid, gid: r.status === 0 ? Number(r.stdout.trim()) : uid };
}

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { out: { type: "string", short: "o" }, owner: { type: "string" }, mode: { type: "string" } }, HELP);
    if (!args) return 0;
    const out = args.values.out as string | undefined;
    const modeText = args.values.mode as string | undefined;
    const ownerText = args.values.owner as string | undefined;
    if ((modeText || ownerText) && !out) throw new UsageError(`--owner and --mode apply to the key file: give --out FILE\n\n${HELP}`);
    const mode = modeText === undefined ? 0o600 : MODES[modeText];
    if (mode === undefined)
      throw new UsageError(`--mode ${modeText}: use 0600 or 0400; the daemon refuses a key file group or others can read`);
    const owner = ownerText ? parseOwner(ownerText) : undefined;

    const sk = generateSecretKey();
    const pk = pubkeyOf(sk);
    const nsec = nip19.nsecEncode(sk);
    if (out) {
      let fd: number;
      try {
        fd = openSync(out, "wx", mode); // wx: fail if it exists
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        process.stderr.write(
          `buzz-bridge keygen: cannot create ${out}: ${code === "EEXIST" ? "file exists (refusing to overwrite a key)" : code}\n`,
        );
        return 1;
      }
      try {
        // Owner first, key second: the secret is never in a file someone else owns.
        if (owner) fchownSync(fd, owner.uid, owner.gid);
        writeSync(fd, `${nsec}\n`);
      } catch (err) {
        closeSync(fd);
        rmSync(out, { force: true });
        const code = (err as NodeJS.ErrnoException).code;
        process.stderr.write(
          `buzz-bridge keygen: cannot give ${out} to ${ownerText}: ${code}${code === "EPERM" ? " (changing a file's owner needs root)" : ""}\n`,
        );
        return 1;
      }
      closeSync(fd);
    }
    const how = `mode ${mode.toString(8).padStart(4, "0")}${owner ? `, owner ${owner.uid}:${owner.gid}` : ""}`;
    const last = out ? `nsec written to ${out} (${how})` : `nsec: ${nsec}`;
    process.stdout.write(`npub: ${nip19.npubEncode(pk)}\nhex:  ${pk}\n${last}\n`);
    return 0;
  });
}
