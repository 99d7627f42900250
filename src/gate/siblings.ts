/**
 * Siblings: other agents of the same owner. An author is a sibling when its kind 0 profile
 * carries a NIP-OA `auth` tag that the owner signed for that author's key (docs/protocol.md,
 * "Owners, keys and NIP-OA"; the tag is checked by config/nip-oa.ts). The signature is checked
 * here, never taken on the relay's word; the tag's conditions must allow the event being
 * decided (its kind and time).
 *
 * Profiles come from the daemon's bounded profile cache (buzz/profiles.ts), so a
 * sibling's next mention costs no round trip. A look-up that fails or takes longer than
 * the timeout (2 s by default) answers "not a sibling" — fail closed — and is not
 * remembered, so the next event asks again.
 */
import type { Event } from "nostr-tools";
import { conditionsAllow, parseAuthTag, verifyAttestation } from "../config/nip-oa.js";
import type { Profile } from "../buzz/profiles.js";

/** Why an author is or is not a sibling; stable strings (the `sibling` field of gate logs). */
export type SiblingVerdict = "verified" | "no-tag" | "other-owner" | "forged-tag" | "conditions-unmet" | "lookup-failed";

export interface SiblingCheckOptions {
  /** The agent's owner (hex). */
  owner: string;
  /** A profile from the cache or the relay; undefined when the relay could not be asked. */
  lookup(pubkey: string): Promise<Profile | undefined>;
  /** Default 2000 ms. */
  timeoutMs?: number;
}

export class SiblingCheck {
  /** Verdicts of cached profile objects: a re-fetched profile is checked again, a cached one once. */
  private readonly verdicts = new WeakMap<Profile, { verdict: SiblingVerdict; conditions: string }>();
  private readonly timeoutMs: number;

  constructor(private readonly o: SiblingCheckOptions) {
    this.timeoutMs = o.timeoutMs ?? 2000;
  }

  async check(author: string, ev: Pick<Event, "kind" | "created_at">): Promise<SiblingVerdict> {
    const profile = await this.profile(author);
    if (!profile) return "lookup-failed";
    let known = this.verdicts.get(profile);
    if (!known) {
      known = this.judge(profile);
      this.verdicts.set(profile, known);
    }
    if (known.verdict !== "verified") return known.verdict;
    return conditionsAllow(known.conditions, ev).ok ? "verified" : "conditions-unmet";
  }

  private judge(profile: Profile): { verdict: SiblingVerdict; conditions: string } {
    if (!profile.authTag) return { verdict: "no-tag", conditions: "" };
    const parsed = parseAuthTag(profile.authTag);
    if (!parsed.ok) return { verdict: "forged-tag", conditions: "" };
    // Another owner's agent is no sibling, however valid its tag: no signature check needed.
    if (parsed.value.owner !== this.o.owner) return { verdict: "other-owner", conditions: "" };
    const verified = verifyAttestation(parsed.value, profile.pubkey);
    return { verdict: verified.ok ? "verified" : "forged-tag", conditions: parsed.value.conditions };
  }

  private profile(author: string): Promise<Profile | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((r) => {
      timer = setTimeout(() => r(undefined), this.timeoutMs);
      timer.unref();
    });
    return Promise.race([this.o.lookup(author).catch(() => undefined), timeout]).finally(() => clearTimeout(timer));
  }
}
