/**
 * The owner's secret key for `attest` and `register`, read from a file the owner names: used
 * in this process, never stored, never printed or logged (docs/security.md). Errors name the
 * file, never its contents.
 */
import { readFileSync } from "node:fs";
import { KeyError, parseSecretKey, pubkeyOf } from "../../config/keys.js";
import { UsageError } from "../../base/args.js";

export function readOwnerKey(file: string | undefined, help: string): { secret: Uint8Array; pubkey: string } {
  if (!file) throw new UsageError(`--owner-key FILE is required: the file holding the owner's nsec\n\n${help}`);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new UsageError(`--owner-key: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const secret = parseSecretKey(text);
    return { secret, pubkey: pubkeyOf(secret) };
  } catch (err) {
    throw new UsageError(`--owner-key: ${file} holds no secret key (${err instanceof KeyError ? err.message : "unreadable"})`);
  }
}
