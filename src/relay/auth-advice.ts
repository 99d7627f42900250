/**
 * What to do about a relay's refusal, in one wording for every command that meets it
 * (`run`, `doctor`, `post`, `tail`): the relay's own reason, then the fix. A refusal for
 * membership names the npub the relay admin has to add, since that is the one thing the
 * operator has to hand over.
 */
import * as nip19 from "nostr-tools/nip19";

/** `restricted: not a relay member`, `…not a channel member`: the key is not let in. */
export function isMembershipRefusal(reason: string): boolean {
  return /member/i.test(reason);
}

/**
 * The relay's reason plus the fix. `auth`: a refused NIP-42 AUTH or a 401/403 from the HTTP
 * bridge, where any `restricted:`/`blocked:` means the key is not let in; `publish`: a
 * refused event, where `restricted:` can also mean a wrong channel id.
 */
export function refusalAdvice(reason: string, pubkey: string, context: "auth" | "publish" = "auth"): string {
  const why = reason || "(the relay gave no reason)";
  if (/created_at|time|clock/i.test(why)) return `${why}: check this machine's clock (NTP)`;
  if (/channel member/i.test(why)) return `${why}: ask a channel admin to add ${nip19.npubEncode(pubkey)} to the channel`;
  if (isMembershipRefusal(why) || (context === "auth" && /^(restricted|blocked)\b/.test(why))) {
    return `${why}: ask the relay admin to add ${nip19.npubEncode(pubkey)} as a relay member`;
  }
  return context === "auth" ? `relay refused NIP-42 auth: ${why}` : why;
}

/** The part of a relay client this needs: its auth outcome. */
interface AuthObservable {
  waitAuthenticated(timeoutMs: number): Promise<boolean>;
  once(event: "auth-failed", listener: (reason: string) => void): unknown;
  off(event: "auth-failed", listener: (reason: string) => void): unknown;
}

/**
 * Waits for a started client's NIP-42 outcome: admitted, refused with the relay's reason (at
 * once, not after a timeout: the client would only keep reconnecting), or no answer in time.
 */
export async function waitAdmitted(client: AuthObservable, timeoutMs: number): Promise<{ ok: true } | { ok: false; refused?: string }> {
  let onFail: ((reason: string) => void) | undefined;
  const refused = new Promise<string>((resolve) => {
    onFail = resolve;
    client.once("auth-failed", onFail);
  });
  try {
    const result = await Promise.race([
      client.waitAuthenticated(timeoutMs).then((ok) => ({ ok }) as const),
      refused.then((reason) => ({ ok: false, refused: reason }) as const),
    ]);
    return result.ok ? { ok: true } : result;
  } finally {
    client.off("auth-failed", onFail!);
  }
}
