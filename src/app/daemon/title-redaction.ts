/**
 * What a tool call's title must never show the channel (turn/redact-title.ts): the state
 * directory's paths (as configured and as really resolved) and the secrets this daemon
 * holds — its key in both spellings, the fleet database's password.
 */
import { realpathSync } from "node:fs";
import * as nip19 from "nostr-tools/nip19";
import { bytesToHex } from "nostr-tools/utils";
import type { RedactOptions } from "../../turn/redact-title.js";

export function titleRedaction(stateDir: string, secretKey: Uint8Array, databaseUrl: string | undefined): RedactOptions {
  const dirs = [stateDir];
  try {
    const real = realpathSync(stateDir);
    if (real !== stateDir) dirs.push(real);
  } catch {
    // not created yet: its configured path is the one titles would show
  }
  const secrets = [bytesToHex(secretKey), nip19.nsecEncode(secretKey)];
  const password = passwordOf(databaseUrl);
  if (password) secrets.push(password);
  return { privateDirs: dirs, secrets };
}

function passwordOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}
