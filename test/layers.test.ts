/**
 * The import check of `npm test` (`npm run deps`, .dependency-cruiser.cjs): the layers of
 * docs/architecture.md §2 only point down and no import goes round a cycle. Pinned twice:
 * the real tree passes, and a small tree with one upward import and one cycle is refused
 * with both named — so a rule that silently matched nothing would fail here.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "..");
const depcruise = join(repo, "node_modules", ".bin", "depcruise");
const config = join(repo, ".dependency-cruiser.cjs");

async function cruise(cwd: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(depcruise, ["src", "--config", config, "--output-type", "err"], { cwd });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

test("the source tree has no import cycle and no import that points up a layer", async () => {
  const { code, out } = await cruise(repo);
  assert.equal(code, 0, out);
  assert.match(out, /no dependency violations found/);
});

test("an upward import (also turn/ into intake/), a cycle, a folder outside the layers and app/'s room rules are each refused by name", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-layers-"));
  try {
    const file = (path: string, text: string) => {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    file("tsconfig.json", JSON.stringify({ compilerOptions: { module: "nodenext", moduleResolution: "nodenext" } }));
    file("src/app/daemon/daemon.ts", "export const wiring = 1;\n");
    // base/ is the floor: reaching up to the daemon is the upward import.
    file("src/base/log.ts", 'import { wiring } from "../app/daemon/daemon.js";\nexport const log = wiring;\n');
    // relay ↔ gate: gate may use relay, but relay using gate closes a cycle (and points up).
    file("src/relay/client.ts", 'import { decide } from "../gate/gate.js";\nexport const client = () => decide;\n');
    file("src/gate/gate.ts", 'import { client } from "../relay/client.js";\nexport const decide = () => client;\n');
    // intake/ is the front door above turn/: it hands events to the turn, and a turn reaching
    // back into it points up.
    file("src/intake/intake.ts", 'import { log } from "../base/log.js";\nexport const intake = log;\n');
    file("src/turn/dispatch.ts", 'import { intake } from "../intake/intake.js";\nexport const dispatch = intake;\n');
    file("src/extras/thing.ts", 'import { log } from "../base/log.js";\nexport const thing = log;\n');
    // app/'s rooms: the HTTP surface reaching up into the daemon's wiring, doctor importing
    // the daemon itself, and a file left in app/ outside every room.
    file("src/app/http/metrics.ts", 'import { wiring } from "../daemon/daemon.js";\nexport const metrics = wiring;\n');
    file("src/app/doctor/doctor.ts", 'import { wiring } from "../daemon/daemon.js";\nexport const doctor = wiring;\n');
    file("src/app/loose.ts", 'import { log } from "../base/log.js";\nexport const loose = log;\n');
    const { code, out } = await cruise(dir);
    assert.notEqual(code, 0, out);
    assert.match(out, /layer-base: src\/base\/log\.ts → src\/app\/daemon\/daemon\.ts/);
    assert.match(out, /layer-relay: src\/relay\/client\.ts → src\/gate\/gate\.ts/);
    assert.match(out, /no-circular: src\/(relay\/client|gate\/gate)\.ts/);
    assert.match(out, /layer-turn: src\/turn\/dispatch\.ts → src\/intake\/intake\.ts/);
    assert.match(out, /src-in-layers: src\/extras\/thing\.ts/);
    assert.match(out, /app-room-http: src\/app\/http\/metrics\.ts → src\/app\/daemon\/daemon\.ts/);
    assert.match(out, /doctor-not-daemon: src\/app\/doctor\/doctor\.ts → src\/app\/daemon\/daemon\.ts/);
    assert.match(out, /app-in-rooms: src\/app\/loose\.ts/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
