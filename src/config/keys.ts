/**
 * Key parsing for config and CLI input. On the wire pubkeys are always 64 lowercase hex
 * (docs/protocol.md §6); people write npub1… as often as hex, so both are accepted here and
 * normalised once. NIP-19 decoding is nostr-tools', never hand-rolled.
 */
import { createECDH } from "node:crypto";
// Subpath imports: the package root also loads NIP-04/NIP-44 encryption, which nothing here uses.
import * as nip19 from "nostr-tools/nip19";
import { hexToBytes, bytesToHex } from "nostr-tools/utils";

const HEX64 = /^[0-9a-fA-F]{64}$/;

/** A key that cannot be used; the message says what was expected (never the secret itself). */
export class KeyError extends Error {
  override name = "KeyError";
}

/** npub1… or 64-hex → lowercase hex; throws with a message saying what was wrong. */
export function parsePubkey(text: string): string {
  const t = text.trim();
  if (HEX64.test(t)) return t.toLowerCase();
  if (t.startsWith("npub1")) {
    let decoded: ReturnType<typeof nip19.decode>;
    try {
      decoded = nip19.decode(t);
    } catch (err) {
      throw new KeyError(`not a valid npub (${(err as Error).message})`);
    }
    if (decoded.type !== "npub") throw new KeyError(`expected an npub, got ${decoded.type}`);
    return decoded.data;
  }
  if (t.startsWith("nsec1")) throw new KeyError("this is a secret key (nsec); a public key (npub or hex) belongs here");
  throw new KeyError("expected npub1… or 64 hex characters");
}

/**
 * nsec1… or 64-hex → secret key bytes; the error never echoes the input. A secret outside
 * secp256k1's 1 … n−1 is refused here, where the caller can say where it came from.
 */
export function parseSecretKey(text: string): Uint8Array {
  const key = decodeSecretKey(text);
  pubkeyOf(key);
  return key;
}

function decodeSecretKey(text: string): Uint8Array {
  const t = text.trim();
  if (HEX64.test(t)) return hexToBytes(t.toLowerCase());
  if (t.startsWith("nsec1")) {
    try {
      const decoded = nip19.decode(t);
      if (decoded.type === "nsec") return decoded.data;
    } catch {
      // fall through to the generic message: the input is a secret and is not repeated
    }
    throw new KeyError("not a valid nsec");
  }
  throw new KeyError("expected nsec1… or 64 hex characters");
}

export function npub(hex: string): string {
  return nip19.npubEncode(hex);
}

/**
 * The BIP-340 public key of `secret` as 64 hex: the x coordinate of secret·G on secp256k1,
 * computed by Node's OpenSSL. nostr-tools' pure-JavaScript `getPublicKey` would give the
 * same key, but its first call builds a table of multiples of G and runs hot enough for V8
 * to compile it: 11–13 MiB more resident memory in a daemon that derives one key at start
 * (bench/README.md, figure 7). Throws a KeyError for a secret outside 1 … n−1.
 */
export function pubkeyOf(secret: Uint8Array): string {
  const ecdh = createECDH("secp256k1");
  try {
    ecdh.setPrivateKey(secret);
  } catch {
    throw new KeyError(
      "not a usable secret key: as a number it must be from 1 to the secp256k1 group order minus 1; `buzz-bridge keygen` makes one",
    );
  }
  return ecdh.getPublicKey("hex", "compressed").slice(2);
}

export { bytesToHex };
