/**
 * NIP-OA owner attestation: the tag `["auth", <owner-hex>, <conditions>, <sig-hex>]` by
 * which an owner's key vouches for an agent's key (docs/protocol.md, "Owners, keys and NIP-OA").
 *
 * The owner signs, with BIP-340 Schnorr, the SHA-256 of the text
 * `nostr:agent-auth:<agent-pubkey-hex>:<conditions>`. Conditions are empty or clauses
 * joined by `&`: `kind=N`, `created_at<T`, `created_at>T` (canonical decimals). An owner
 * cannot attest itself. The curve and hash are @noble's (what nostr-tools is built on);
 * nothing cryptographic is written here.
 *
 * Results are unions, never throws: the config loader turns a problem into a config error
 * naming it, the gate turns it into the reason a would-be sibling was refused.
 */
import { schnorr } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";

export interface AuthTag {
  owner: string;
  conditions: string;
  sig: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

const LOWER_HEX64 = /^[0-9a-f]{64}$/;
const LOWER_HEX128 = /^[0-9a-f]{128}$/;
const CLAUSE = /^(kind=|created_at<|created_at>)(0|[1-9][0-9]*)$/;
const CLAUSE_MAX = { "kind=": 65_535, "created_at<": 4_294_967_295, "created_at>": 4_294_967_295 } as const;

/** The tag as a JSON array of strings (the form `BUZZ_AUTH_TAG` and the Buzz CLI use), or the array itself. */
export function parseAuthTag(input: unknown): Parsed<AuthTag> {
  let arr = input;
  if (typeof input === "string") {
    try {
      arr = JSON.parse(input.trim());
    } catch {
      return { ok: false, problem: 'not valid JSON; expected ["auth","<owner hex>","<conditions>","<signature hex>"]' };
    }
  }
  if (!Array.isArray(arr)) return { ok: false, problem: "must be a JSON array" };
  if (arr.length !== 4) return { ok: false, problem: `must have 4 elements, got ${arr.length}` };
  if (!arr.every((x) => typeof x === "string")) return { ok: false, problem: "every element must be a string" };
  const [label, owner, conditions, sig] = arr as string[];
  if (label !== "auth") return { ok: false, problem: `first element must be "auth", got ${JSON.stringify(label)}` };
  if (!LOWER_HEX64.test(owner!)) return { ok: false, problem: "the owner (2nd element) must be 64 lowercase hex characters" };
  if (!LOWER_HEX128.test(sig!)) return { ok: false, problem: "the signature (4th element) must be 128 lowercase hex characters" };
  const bad = conditionsProblem(conditions!);
  if (bad) return { ok: false, problem: bad };
  return { ok: true, value: { owner: owner!, conditions: conditions!, sig: sig! } };
}

function conditionsProblem(conditions: string): string | undefined {
  if (conditions === "") return undefined;
  for (const clause of conditions.split("&")) {
    const m = CLAUSE.exec(clause);
    if (!m) return `unsupported condition clause ${JSON.stringify(clause)} (expected kind=N, created_at<T or created_at>T)`;
    if (Number(m[2]) > CLAUSE_MAX[m[1] as keyof typeof CLAUSE_MAX]) return `condition ${JSON.stringify(clause)} is out of range`;
  }
  return undefined;
}

function digest(agentPubkey: string, conditions: string): Uint8Array {
  return sha256(utf8ToBytes(`nostr:agent-auth:${agentPubkey}:${conditions}`));
}

/** The owner when `tag` is a valid attestation of `agentPubkey` (hex); else what is wrong. */
export function verifyAttestation(tag: AuthTag, agentPubkey: string): Parsed<string> {
  if (tag.owner === agentPubkey) return { ok: false, problem: "owner and agent are the same key (self-attestation is refused)" };
  let valid = false;
  try {
    valid = schnorr.verify(hexToBytes(tag.sig), digest(agentPubkey, tag.conditions), hexToBytes(tag.owner));
  } catch {
    valid = false;
  }
  return valid ? { ok: true, value: tag.owner } : { ok: false, problem: "the owner's signature does not verify for this agent key" };
}

/**
 * Whether the attestation's conditions allow an event of this kind and time. Every clause
 * must hold; both time bounds are strict, as NIP-OA defines them.
 */
export function conditionsAllow(conditions: string, ev: { kind: number; created_at: number }): Parsed<true> {
  if (conditions === "") return { ok: true, value: true };
  for (const clause of conditions.split("&")) {
    const m = CLAUSE.exec(clause);
    if (!m) return { ok: false, problem: `unsupported condition ${clause}` };
    const n = Number(m[2]);
    const holds = m[1] === "kind=" ? ev.kind === n : m[1] === "created_at<" ? ev.created_at < n : ev.created_at > n;
    if (!holds) return { ok: false, problem: `condition ${clause} does not hold (kind ${ev.kind}, created_at ${ev.created_at})` };
  }
  return { ok: true, value: true };
}

/**
 * Time bounds only (the `kind=` clauses restrict what the agent may publish, not when the
 * attestation is valid): used for the agent's own tag at start-up.
 */
export function timeBoundsAllow(conditions: string, atSec: number): Parsed<true> {
  for (const clause of conditions === "" ? [] : conditions.split("&")) {
    if (clause.startsWith("kind=")) continue;
    const r = conditionsAllow(clause, { kind: 0, created_at: atSec });
    if (!r.ok) return r;
  }
  return { ok: true, value: true };
}

/** An attestation of `agentPubkey` by `ownerSecret` (for tests and for owners who make one here). */
export function signAttestation(ownerSecret: Uint8Array, agentPubkey: string, conditions = ""): string[] {
  const owner = bytesToHex(schnorr.getPublicKey(ownerSecret));
  const sig = bytesToHex(schnorr.sign(digest(agentPubkey, conditions), ownerSecret));
  return ["auth", owner, conditions, sig];
}
