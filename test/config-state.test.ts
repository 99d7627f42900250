/**
 * `state`: the backend is sqlite unless told otherwise; postgres needs a URL, which comes
 * from the environment and is shown with its password redacted by `check` and in logs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { PassThrough } from "node:stream";
import { generateSecretKey, nip19 } from "nostr-tools";
import { loadConfigText, ConfigError } from "../src/config/load.js";
import { createLogger } from "../src/base/log.js";

const CLI = join(import.meta.dirname, "..", "dist", "cli.js");
const nsec = nip19.nsecEncode(generateSecretKey());
const doc = (extra = "") => `identity:\n  secret_key: ${nsec}\nrelay:\n  url: ws://127.0.0.1:7777\n${extra}`;
const URL_WITH_PASSWORD = "postgres://bridge:hunter2-secret@db.internal:5432/buzz_bridge";

function problems(text: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    loadConfigText(text, "t.yaml", env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  assert.fail("accepted");
}

test("without a state section the backend is sqlite under state_dir, as before", () => {
  const { config } = loadConfigText(doc(), "t.yaml", {});
  assert.deepEqual(config.state, { backend: "sqlite" });
  assert.match(config.state_dir, /buzz-bridge-state$/);
});

test("backend postgres takes its url from the environment", () => {
  const { config } = loadConfigText(doc("state:\n  backend: postgres\n  url: ${BUZZ_BRIDGE_DATABASE_URL}\n"), "t.yaml", {
    BUZZ_BRIDGE_DATABASE_URL: URL_WITH_PASSWORD,
  });
  assert.deepEqual(config.state, { backend: "postgres", url: URL_WITH_PASSWORD });
});

test("bad state settings are refused with the key and what to do", () => {
  assert.match(problems(doc("state:\n  backend: postgres\n")), /t\.yaml:\d+:\d+: state\.url: backend: postgres needs url/);
  assert.match(
    problems(doc("state:\n  backend: sqlite\n  url: postgres://x@h/db\n")),
    /state\.url: url only applies with backend: postgres/,
  );
  assert.match(
    problems(doc("state:\n  backend: postgres\n  url: mysql://h/db\n")),
    /state\.url: expected a postgres:\/\/ or postgresql:\/\/ URL/,
  );
  assert.match(problems(doc("state:\n  backend: redis\n")), /state\.backend/);
});

test("check shows the database URL with its password redacted", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-cfg-state-"));
  try {
    const file = join(dir, "c.yaml");
    writeFileSync(file, doc("state:\n  backend: postgres\n  url: ${BUZZ_BRIDGE_DATABASE_URL}\n"));
    const r = spawnSync(process.execPath, [CLI, "check", "-c", file], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, BUZZ_BRIDGE_DATABASE_URL: URL_WITH_PASSWORD },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /url: postgres:\/\/bridge:\[redacted\]@db\.internal:5432\/buzz_bridge/);
    assert.doesNotMatch(r.stdout + r.stderr, /hunter2/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a database password never reaches a log line: config objects and message text", () => {
  const out = new PassThrough();
  let text = "";
  out.on("data", (c: Buffer) => (text += c.toString()));
  const log = createLogger({ destination: out });
  log.info({ evt: "x", config: { state: { backend: "postgres", url: URL_WITH_PASSWORD } } });
  log.info({ evt: "y", state: { url: URL_WITH_PASSWORD } });
  log.warn(`could not reach ${URL_WITH_PASSWORD} and postgresql://u:p4ss@h/db?sslmode=require and postgres://h/db?password=p5ss`);
  assert.doesNotMatch(text, /hunter2|p4ss|p5ss/);
  assert.match(text, /postgres:\/\/bridge:\[redacted\]@db\.internal/);
});
