/**
 * Secrets in public tool titles: every credential form of the corpus (test/fixtures/
 * title-secrets.ts) is gone from the title the redactor gives the "still working" note, and
 * from the work status (kind 30181) every member of the channel reads; titles with nothing
 * secret stay as they are.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { EventTemplate } from "nostr-tools";
import { redactTitle } from "../../src/turn/redact-title.js";
import { WorkStatusBoard } from "../../src/turn/work-status.js";
import { TITLE_PLAIN, TITLE_SECRETS } from "../fixtures/title-secrets.js";

const opts = { privateDirs: ["/var/lib/buzz-bridge"] };

describe("secrets in public tool titles", () => {
  test("the redactor removes every secret of the corpus and keeps the text around it", () => {
    const leaks: string[] = [];
    for (const c of TITLE_SECRETS) {
      const out = redactTitle(c.title, opts);
      for (const s of c.secrets) if (out.includes(s)) leaks.push(`${c.form}: ${JSON.stringify(out)}`);
      for (const k of c.keeps ?? []) if (!out.includes(k)) leaks.push(`${c.form}: lost ${JSON.stringify(k)} in ${JSON.stringify(out)}`);
    }
    assert.deepEqual(leaks, []);
  });

  test("titles with nothing secret stay as they are", () => {
    for (const t of TITLE_PLAIN) assert.equal(redactTitle(t, opts), t);
  });

  test("a stranger reading the work status (30181) sees none of the corpus's secrets", () => {
    const out: EventTemplate[] = [];
    let now = 1_000_000;
    const board = new WorkStatusBoard({ publish: (t) => out.push(t), redact: opts, now: () => now });
    const turn = board.begin("ch-1", { turnId: "1" });
    TITLE_SECRETS.forEach((c, i) => {
      now += 10_000;
      turn.update({ sessionUpdate: "tool_call", toolCallId: `c${i}`, title: c.title, status: "in_progress" });
    });
    const shown = out.map((t) => t.content).join("\n");
    assert.ok(out.length > TITLE_SECRETS.length / 2, `the board was published (${out.length} times)`);
    const leaked = TITLE_SECRETS.filter((c) => c.secrets.some((s) => shown.includes(s))).map((c) => c.form);
    assert.deepEqual(leaked, []);
  });
});
