/**
 * The "still working" note's rules with a recording publisher: posted after the delay with
 * the redacted title, edited at most once per interval and only with a new title, deleted
 * at the end; never posted for a turn that ends first or with progress off.
 */
import { mock, test } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, generateSecretKey, type EventTemplate } from "nostr-tools";
import { ProgressNote } from "../../src/turn/progress.js";
import { KIND } from "../../src/nostr/kinds.js";
import { silentLogger } from "../../src/base/log.js";
import { sleep, waitFor } from "../../kit/wait.js";

const sk = generateSecretKey();
const thread = { root: "a".repeat(64), parent: "a".repeat(64) };

function recorder() {
  const published: EventTemplate[] = [];
  const signals: EventTemplate[] = [];
  return {
    published,
    signals,
    out: {
      publish: async (t: EventTemplate) => (published.push(t), finalizeEvent({ ...t, tags: t.tags.map((x) => [...x]) }, sk)),
      signal: (t: EventTemplate) => void signals.push(t),
    },
  };
}

const tool = (title: string) => ({ sessionUpdate: "tool_call" as const, toolCallId: title, title });

test("posted after the delay naming the redacted title; one edit per interval with the newest title; deleted at the end", async () => {
  const r = recorder();
  const note = new ProgressNote({
    afterMs: 20,
    channel: "ch",
    thread,
    out: r.out,
    titles: "full",
    redact: (t) => t.replace("secret", "[redacted]"),
    editEveryMs: 150,
    logger: silentLogger(),
  });
  note.start();
  note.observe(tool("cat secret.txt"));
  await waitFor(() => r.published.length === 1, { what: "the note" });
  assert.equal(r.published[0]!.content, "Still working on this — now: cat [redacted].txt");
  note.observe(tool("step two"));
  note.observe(tool("step three"));
  await waitFor(() => r.signals.length === 1, { what: "an edit" });
  assert.equal(r.signals[0]!.kind, KIND.edit);
  assert.equal(r.signals[0]!.content, "Still working on this — now: step three", "the newest title, in one edit");
  note.observe(tool("step four"));
  await waitFor(() => r.signals.length === 2, { what: "the next edit" });
  assert.equal(r.signals[1]!.content, "Still working on this — now: step four");
  await note.finish();
  const del = r.published.at(-1)!;
  assert.equal(del.kind, KIND.deletion);
  assert.equal(r.published.length, 2, "the note and its deletion");
});

test("one edit per interval: titles arriving at different moments are edited in no sooner than the interval after the last edit, each with the newest title", async () => {
  // Mock timers: the interval is a timing rule, so the clock is the test's (docs/testing.md).
  mock.timers.enable({ apis: ["setTimeout", "Date"], now: 0 });
  try {
    const sent: { at: number; kind: number; content: string }[] = [];
    const note = new ProgressNote({
      afterMs: 20,
      channel: "ch",
      thread,
      editEveryMs: 100,
      titles: "full",
      redact: (t) => t,
      logger: silentLogger(),
      out: {
        publish: async (t: EventTemplate) => {
          sent.push({ at: Date.now(), kind: t.kind, content: t.content });
          return finalizeEvent({ ...t, tags: t.tags.map((x) => [...x]) }, sk);
        },
        signal: (t: EventTemplate) => void sent.push({ at: Date.now(), kind: t.kind, content: t.content }),
      },
    });
    /** Moves the clock to `t` ms, letting the note's publish (a promise) settle at each step. */
    const until = async (t: number) => {
      while (Date.now() < t) {
        mock.timers.tick(Math.min(10, t - Date.now()));
        for (let i = 0; i < 5; i++) await Promise.resolve();
      }
    };
    note.start();
    // The model is heard before the delay ends, so the note is posted when the delay ends (20).
    await until(10);
    note.observe(tool("first"));
    await until(20);
    const titles: [number, string][] = [
      [30, "a"],
      [60, "b"],
      [90, "c"],
      [200, "d"],
      [260, "e"],
      [280, "f"],
      [400, "g"],
    ];
    for (const [at, title] of titles) {
      await until(at);
      note.observe(tool(title));
    }
    await until(600);
    const edits = sent.filter((s) => s.kind === KIND.edit);
    assert.deepEqual(
      edits.map((e) => [e.at, e.content.replace("Still working on this — now: ", "")]),
      [
        [120, "c"],
        [220, "d"],
        [320, "f"],
        [420, "g"],
      ],
      "each edit one interval after the last (the note's post counts as one) or at the title's arrival if later, with the newest title",
    );
    const note0 = sent.find((s) => s.kind === KIND.message)!;
    const stamps = [note0.at, ...edits.map((e) => e.at)];
    for (let i = 1; i < stamps.length; i++) assert.ok(stamps[i]! - stamps[i - 1]! >= 100, `gap ${i} is at least the interval`);
    await note.finish();
  } finally {
    mock.timers.reset();
  }
});

test("no note for a turn that ends before the delay, or with progress off", async () => {
  for (const afterMs of [50, false] as const) {
    const r = recorder();
    const note = new ProgressNote({ afterMs, channel: "ch", thread, out: r.out, titles: "full", redact: (t) => t, logger: silentLogger() });
    note.start();
    note.observe(tool("quick"));
    await note.finish();
    await sleep(100); // past the delay: nothing may come after the end
    assert.deepEqual([...r.published, ...r.signals], [], `afterMs ${afterMs}: nothing published`);
  }
});

test("no note while the model has said nothing (a refused key, a provider that never answers); posted at its first word after the delay", async () => {
  const r = recorder();
  const note = new ProgressNote({ afterMs: 20, channel: "ch", thread, out: r.out, redact: (t) => t, logger: silentLogger() });
  note.start();
  // Past the delay with nothing from the model: an update of the session's own (not the model's) changes nothing.
  await sleep(120);
  note.observe({ sessionUpdate: "available_commands_update", availableCommands: [] });
  assert.equal(r.published.length, 0, "no note before the model answered");
  note.observe({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Looking" } });
  await waitFor(() => r.published.length === 1, { what: "the note at the model's first word" });
  assert.equal(r.published[0]!.content, "Still working on this…");
  await note.finish();
});
