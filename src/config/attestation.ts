/**
 * The agent's own NIP-OA attestation (`identity.auth_tag` or `identity.auth_tag_file`),
 * checked once when the config loads: it must be well formed, signed by its owner for
 * THIS agent's key, and inside its time bounds. Its owner then becomes the owner (before
 * a configured `identity.owner`), as the Rust bridge resolves it from `BUZZ_AUTH_TAG`.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { npub } from "./keys.js";
import { parseAuthTag, timeBoundsAllow, verifyAttestation } from "./nip-oa.js";
import { nowSec } from "../base/time.js";

export type AttestationResult =
  | { ok: true; tag?: string[]; owner?: string; warning?: string }
  | { ok: false; key: "auth_tag" | "auth_tag_file"; problem: string };

export function resolveAttestation(
  identity: { auth_tag?: string | string[]; auth_tag_file?: string; owner?: string },
  baseDir: string,
  agentPubkey: string,
  atSec = nowSec(),
): AttestationResult {
  const key = identity.auth_tag_file !== undefined ? "auth_tag_file" : "auth_tag";
  let text: string | string[] | undefined = identity.auth_tag;
  if (identity.auth_tag_file !== undefined) {
    const file = resolve(baseDir, identity.auth_tag_file);
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      return {
        ok: false,
        key,
        problem: `cannot read auth tag file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      };
    }
  }
  if (text === undefined) return { ok: true };
  const parsed = parseAuthTag(text);
  if (!parsed.ok) return { ok: false, key, problem: `the NIP-OA auth tag ${parsed.problem}` };
  const tag = parsed.value;
  const verified = verifyAttestation(tag, agentPubkey);
  if (!verified.ok) {
    return {
      ok: false,
      key,
      problem: `the NIP-OA auth tag does not match this agent: ${verified.problem}. It must be signed by the owner for the agent key ${npub(agentPubkey)}; ask the owner for a tag made for this key`,
    };
  }
  const inTime = timeBoundsAllow(tag.conditions, atSec);
  if (!inTime.ok)
    return { ok: false, key, problem: `the NIP-OA auth tag is not valid now: ${inTime.problem}; ask the owner for a new one` };
  const warning =
    identity.owner !== undefined && identity.owner !== tag.owner
      ? `identity.owner (${npub(identity.owner)}) differs from the auth tag's owner (${npub(tag.owner)}); the auth tag's owner is used`
      : undefined;
  return { ok: true, tag: ["auth", tag.owner, tag.conditions, tag.sig], owner: tag.owner, warning };
}
