/**
 * The bridge's own public key, derived from its secret by Node's OpenSSL (config/keys.ts
 * `pubkeyOf`): the same key nostr-tools derives, for keys across the range, and a clear
 * KeyError for a secret that is no key at all, instead of a crash at start.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as nip19 from "nostr-tools/nip19";
import { generateSecretKey, getPublicKey } from "nostr-tools/pure";
import { hexToBytes } from "nostr-tools/utils";
import { KeyError, parseSecretKey, pubkeyOf } from "../../src/config/keys.js";
import { ConfigError, loadConfigText } from "../../src/config/load.js";

const N_MINUS_1 = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140";

test("the public key of a secret is the one nostr-tools derives (BIP-340 x-only), at the ends of the range and between", () => {
  const secrets = [
    hexToBytes("0000000000000000000000000000000000000000000000000000000000000001"),
    hexToBytes("0000000000000000000000000000000000000000000000000000000000000003"),
    hexToBytes(N_MINUS_1),
    ...Array.from({ length: 50 }, () => generateSecretKey()),
  ];
  for (const sk of secrets) assert.equal(pubkeyOf(sk), getPublicKey(sk));
  // The generator's x coordinate: the key of secret 1.
  assert.equal(pubkeyOf(secrets[0]!), "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798");
});

test("a secret outside 1 … n−1 is refused with a KeyError that names the rule and never echoes the secret", () => {
  for (const hex of ["0".repeat(64), "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", "f".repeat(64)]) {
    const refused = (err: unknown) =>
      err instanceof KeyError && /from 1 to the secp256k1 group order minus 1/.test(err.message) && !err.message.includes(hex);
    assert.throws(() => parseSecretKey(hex), refused);
    assert.throws(() => pubkeyOf(hexToBytes(hex)), refused);
    assert.throws(() => parseSecretKey(nip19.nsecEncode(hexToBytes(hex))), refused);
  }
});

test("a config whose secret_key is no usable key is refused at that line, not by a crash at start", () => {
  const zero = "0".repeat(64);
  const text = `identity:\n  secret_key: "${zero}"\nrelay:\n  url: ws://127.0.0.1:7777\n`;
  assert.throws(
    () => loadConfigText(text, "t.yaml", {}),
    (err: unknown) =>
      err instanceof ConfigError &&
      /^t\.yaml:2:\d+: identity\.secret_key: not a usable secret key: .*`buzz-bridge keygen` makes one$/m.test(err.message) &&
      !err.message.includes(zero),
  );
});
