/**
 * The "still working" note's rules with a recording publisher: posted after the delay with
 * the redacted title, edited at most once per interval and only with a new title, deleted
 * at the end; never posted for a turn that ends first or with progress off.
 */
import { mock, test } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, generateSecretKey, type EventTemplate } from "nostr-tools";
import { ProgressNote, type ProgressNoteOptions } from "../../src/turn/progress.js";
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

/**
 * A note in the test thread, its titles passed through as they are and its log silent; each
 * test gives what it is about (where it publishes, the delay, the interval, how titles show).
 */
const noteWith = (o: Pick<ProgressNoteOptions, "out"> & Partial<ProgressNoteOptions>) =>
  new ProgressNote({ afterMs: 20, channel: "ch", thread, redact: (t) => t, logger: silentLogger(), ...o });

test("posted after the delay naming the redacted title; one edit per interval with the newest title; deleted at the end", async () => {
  const r = recorder();
  const note = noteWith({
    out: r.out,
    titles: "full",
    redact: (t) => t.replace("secret", "[redacted]"),
    editEveryMs: 150,
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

test("a note due before the model's first word is posted on it, naming the tool call that word is (no edit later)", async () => {
  const r = recorder();
  const note = noteWith({
    out: r.out,
    titles: "brief",
    editEveryMs: 60_000,
  });
  note.start();
  // The delay runs out while the agent has said nothing (a slow start): nothing to post yet.
  await sleep(60);
  assert.equal(r.published.length, 0, "no note before the model says anything");
  note.observe({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Running npm test", kind: "execute" });
  await waitFor(() => r.published.length === 1, { what: "the note" });
  assert.equal(r.published[0]!.content, "Still working on this — now: shell", "the first word's tool, by its kind");
  await note.finish();
  assert.deepEqual(r.signals, [], "no edit was needed");
});

test("one edit per interval: titles arriving at different moments are edited in no sooner than the interval after the last edit, each with the newest title", async () => {
  // Mock timers: the interval is a timing rule, so the clock is the test's (docs/testing.md).
  mock.timers.enable({ apis: ["setTimeout", "Date"], now: 0 });
  try {
    const sent: { at: number; kind: number; content: string }[] = [];
    const note = noteWith({
      editEveryMs: 100,
      titles: "full",
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
    const note = noteWith({ afterMs, out: r.out, titles: "full" });
    note.start();
    note.observe(tool("quick"));
    await note.finish();
    await sleep(100); // past the delay: nothing may come after the end
    assert.deepEqual([...r.published, ...r.signals], [], `afterMs ${afterMs}: nothing published`);
  }
});

test("no note while the model has said nothing (a refused key, a provider that never answers); posted at its first word after the delay", async () => {
  const r = recorder();
  const note = noteWith({ out: r.out });
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

test("the note is a reply in the turn's thread marked as progress; its edits and its deletion name the note and the channel", async () => {
  const r = recorder();
  const note = noteWith({
    out: r.out,
    titles: "full",
    editEveryMs: 10,
  });
  note.start();
  note.observe(tool("first"));
  await waitFor(() => r.published.length === 1, { what: "the note" });
  const posted = r.published[0]!;
  assert.equal(posted.kind, KIND.message);
  assert.deepEqual(
    posted.tags.filter((t) => t[0] === "h" || t[0] === "e" || t[0] === "buzz"),
    [
      ["h", "ch"],
      ["e", thread.root, "", "reply"],
      ["buzz", "progress"],
    ],
  );
  const id = finalizeEvent({ ...posted, tags: posted.tags.map((x) => [...x]) }, sk).id;
  // A tool call's update with a new title is what the agent does now.
  note.observe({ sessionUpdate: "tool_call_update", toolCallId: "first", title: "second" });
  await waitFor(() => r.signals.length === 1, { what: "the edit" });
  assert.deepEqual(r.signals[0]!.tags, [
    ["h", "ch"],
    ["e", id],
  ]);
  assert.equal(r.signals[0]!.content, "Still working on this — now: second");
  await note.finish();
  const del = r.published[1]!;
  assert.equal(del.kind, KIND.deletion);
  assert.equal(del.content, "");
  assert.deepEqual(del.tags, [
    ["e", id],
    ["k", String(KIND.message)],
    ["h", "ch"],
  ]);
});

test("an update without a title keeps the note's; a title that changes back before its edit is due edits nothing", async () => {
  const r = recorder();
  const note = noteWith({
    out: r.out,
    titles: "full",
    editEveryMs: 150,
  });
  note.start();
  note.observe(tool("build"));
  await waitFor(() => r.published.length === 1, { what: "the note" });
  note.observe(tool("lint"));
  note.observe(tool("build"));
  note.observe({ sessionUpdate: "tool_call_update", toolCallId: "build", status: "completed" });
  await sleep(300); // past the edit interval: an edit would have been sent
  assert.equal(r.signals.length, 0, "the note still says what the agent does: no edit");
  note.observe({ sessionUpdate: "tool_call_update", toolCallId: "x", status: "in_progress" });
  note.observe(tool("test"));
  await waitFor(() => r.signals.length === 1, { what: "the edit" });
  assert.equal(r.signals[0]!.content, "Still working on this — now: test");
  await note.finish();
});

test("any sign of the model is its first word (thought, tool call, its update, plan, usage); nothing comes after the end", async () => {
  const signs = [
    { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hmm" } },
    { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" },
    { sessionUpdate: "plan", entries: [] },
    { sessionUpdate: "usage_update", used: 10, size: 1000 },
  ] as const;
  for (const sign of signs) {
    const r = recorder();
    const note = noteWith({ out: r.out });
    note.start();
    await sleep(60);
    note.observe(sign as never);
    await waitFor(() => r.published.length === 1, { what: `the note at ${sign.sessionUpdate}` });
    await note.finish();
  }
  // The delay passed with the model silent, then the turn ended: its late first word posts nothing.
  const r = recorder();
  const late = noteWith({ out: r.out });
  late.start();
  await sleep(60);
  await late.finish();
  late.observe({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Done" } });
  await sleep(60);
  assert.deepEqual(r.published, [], "no note after the end");
});

test("a turn that ends while its note is on its way: the note is deleted and never edited after", async () => {
  const published: EventTemplate[] = [];
  const signals: EventTemplate[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const note = noteWith({
    afterMs: 10,
    titles: "full",
    editEveryMs: 10,
    out: {
      publish: async (t: EventTemplate) => {
        published.push(t);
        if (t.kind === KIND.message) await held;
        return finalizeEvent({ ...t, tags: t.tags.map((x) => [...x]) }, sk);
      },
      signal: (t: EventTemplate) => void signals.push(t),
    },
  });
  note.start();
  note.observe(tool("one"));
  await waitFor(() => published.length === 1, { what: "the note on its way" });
  note.observe(tool("two")); // changed while the note is on its way
  const finished = note.finish();
  release();
  await finished;
  assert.deepEqual(
    published.map((t) => t.kind),
    [KIND.message, KIND.deletion],
  );
  await sleep(60);
  assert.deepEqual(signals, [], "no edit of a deleted note");
});
