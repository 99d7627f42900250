/**
 * The shipped fleet examples stay true: the Kubernetes example's config loads with the
 * real schema as a fleet config, and its Deployment takes the secrets from a Secret and
 * readiness from /readyz; the systemd template gives each instance its own state dir and
 * keeps the database URL out of the unit.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseAllDocuments, parse, stringify } from "yaml";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { loadConfigText } from "../../src/config/load.js";

test("the Kubernetes fleet example: its config is a valid postgres fleet config; secrets, readiness and replicas as documented", () => {
  const [cm, deploy] = parseAllDocuments(readFileSync("config/kubernetes-fleet.yaml", "utf8")).map(
    (d) => d.toJSON() as Record<string, any>,
  );
  const raw = parse(cm!.data["buzz-bridge.yaml"] as string) as Record<string, any>;
  assert.equal(raw.identity.secret_key_file, "/etc/buzz-bridge/secret/agent.nsec");
  // The key file exists only in the pod: stand in a key and a real owner npub, keep the rest.
  raw.identity = { secret_key: nip19.nsecEncode(generateSecretKey()), owner: nip19.npubEncode(getPublicKey(generateSecretKey())) };
  const { config } = loadConfigText(stringify(raw), "cm.yaml", {
    BUZZ_BRIDGE_DATABASE_URL: "postgres://bridge:pw@postgres:5432/buzz_bridge",
  });
  assert.deepEqual(config.state, { backend: "postgres", url: "postgres://bridge:pw@postgres:5432/buzz_bridge" });
  const spec = deploy!.spec;
  assert.equal(deploy!.kind, "Deployment");
  assert.equal(spec.replicas, 3);
  const c = spec.template.spec.containers[0];
  assert.equal(c.readinessProbe.httpGet.path, "/readyz");
  assert.deepEqual(c.env.find((e: any) => e.name === "BUZZ_BRIDGE_DATABASE_URL").valueFrom.secretKeyRef, {
    name: "buzz-bridge",
    key: "database-url",
  });
  assert.ok(
    c.volumeMounts.some((m: any) => m.mountPath === "/etc/buzz-bridge/secret"),
    "the key comes from the Secret",
  );
  assert.equal(
    spec.template.spec.volumes.find((v: any) => v.name === "secret").secret.defaultMode,
    0o400,
    "the key file is not group/world readable",
  );
  assert.ok(spec.template.spec.terminationGracePeriodSeconds > 30, "longer than the default shutdown_grace");
});

test("the systemd template: a state dir and health port per instance, the database URL from an EnvironmentFile", () => {
  const unit = readFileSync("config/buzz-bridge@.service", "utf8");
  assert.match(unit, /^StateDirectory=buzz-bridge buzz-bridge\/%i$/m);
  assert.match(unit, /^Environment=BUZZ_BRIDGE_STATE_DIR=\/var\/lib\/buzz-bridge\/%i$/m);
  assert.match(unit, /^EnvironmentFile=\/etc\/buzz-bridge\/database\.env$/m);
  assert.doesNotMatch(
    unit
      .split("\n")
      .filter((l) => !l.startsWith("#"))
      .join("\n"),
    /postgres:\/\//,
    "no database URL in the unit itself",
  );
});
