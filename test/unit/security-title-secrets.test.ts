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
import { publicTitle } from "../../src/turn/public-title.js";
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

  test("by default a title shows the tool's kind and name only, a file tool its file unless secret-shaped", () => {
    const r = (t: string) => redactTitle(t, opts);
    const brief = (u: Parameters<typeof publicTitle>[0]) => publicTitle(u, "brief", r);
    assert.equal(brief({ title: "mysql -u root -pS3cret db", kind: "execute" }), "shell");
    assert.equal(brief({ title: "curl -u bob:tok https://x", kind: "fetch" }), "fetch");
    assert.equal(brief({ title: "send_message", kind: "other" }), "send_message");
    assert.equal(brief({ title: "ghp_abcdefghijklmnopqrstuvwxyz0123", kind: "other" }), "[redacted]");
    assert.equal(brief({ title: "do things with X=1", kind: "other" }), "tool");
    assert.equal(brief({ title: "Edit src/x.ts", kind: "edit", locations: [{ path: "/work/app/src/x.ts" }] }), "edit x.ts");
    assert.equal(brief({ title: "Read secret", kind: "read", locations: [{ path: "/home/u/.ssh/id_ed25519" }] }), "read");
    assert.equal(brief({ title: "Read", kind: "read", locations: [{ path: "/srv/app/.env.production" }] }), "read");
    assert.equal(brief({ title: "Read", kind: "read", locations: [{ path: "/var/lib/buzz-bridge/keys/x.ts" }] }), "read x.ts");
    assert.equal(brief({ status: "completed" } as never), undefined, "a status-only update keeps the title shown");
    assert.equal(publicTitle({ title: "mysql -pS3cret", kind: "execute" }, "full", r), "mysql -p[redacted]");
  });

  test("a stranger reading the work status (30181) sees none of the corpus's secrets", () => {
    const out: EventTemplate[] = [];
    let now = 1_000_000;
    const board = new WorkStatusBoard({ publish: (t) => out.push(t), redact: opts, now: () => now });
    const turn = board.begin("ch-1", { turnId: "1", titles: "full" });
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
