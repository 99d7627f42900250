/** The small shared helpers of src/base/: tags, time, the bounded map and the backoff's factor. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { hasTag, tagValue, tagValues } from "../../src/base/tags.js";
import { nowSec } from "../../src/base/time.js";
import { BoundedMap } from "../../src/base/bounded-map.js";
import { Backoff } from "../../src/base/backoff.js";

const ev = {
  tags: [["h", "chan"], ["p", "alice"], ["p", ""], ["e", "root", "", "root"], ["p", "bob"], ["p", "alice"], ["t"]],
};

test("tagValue is the first tag's value; tagValues every non-empty one in order", () => {
  assert.equal(tagValue(ev, "h"), "chan");
  assert.equal(tagValue(ev, "e"), "root");
  assert.equal(tagValue(ev, "t"), undefined, "a bare tag has no value");
  assert.equal(tagValue(ev, "d"), undefined);
  assert.deepEqual(tagValues(ev, "p"), ["alice", "bob", "alice"]);
  assert.deepEqual(tagValues(ev, "d"), []);
});

test("hasTag matches a name, or a name and an exact value", () => {
  assert.equal(hasTag(ev, "t"), true);
  assert.equal(hasTag(ev, "p", "bob"), true);
  assert.equal(hasTag(ev, "p", "carol"), false);
  assert.equal(hasTag(ev, "h", "CHAN"), false, "values compare exactly");
  assert.equal(hasTag(ev, "x"), false);
});

test("nowSec is whole seconds of the wall clock, rounded down", () => {
  const before = Date.now();
  const s = nowSec();
  assert.equal(Number.isInteger(s), true);
  assert.ok(s >= Math.floor(before / 1000) && s <= Math.floor(Date.now() / 1000), `${s} is not the current second`);
});

test("BoundedMap forgets the least recently set entry first", () => {
  const m = new BoundedMap<string, number>(3);
  m.set("a", 1).set("b", 2).set("c", 3);
  m.set("a", 10); // a is the newest now; b the oldest
  m.set("d", 4);
  assert.deepEqual(
    [...m],
    [
      ["c", 3],
      ["a", 10],
      ["d", 4],
    ],
  );
  assert.equal(m.size, 3);
  assert.equal(m.has("b"), false);
  m.delete("c");
  m.set("e", 5);
  assert.deepEqual([...m.keys()], ["a", "d", "e"], "a free slot is used before anything is forgotten");
});

test("BoundedMap of capacity 1 keeps only the last key", () => {
  const m = new BoundedMap<string, string>(1);
  m.set("x", "1").set("y", "2");
  assert.deepEqual([...m], [["y", "2"]]);
});

test("Backoff without jitter: base · factor^attempt up to the cap; doubling by default", () => {
  const doubling = new Backoff({ baseMs: 100, capMs: 1000, jitter: 0 });
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5].map(() => doubling.next()),
    [100, 200, 400, 800, 1000, 1000],
  );
  const queue = new Backoff({ baseMs: 5_000, factor: 60, capMs: 300_000, jitter: 0 });
  assert.deepEqual(
    [0, 1, 2, 40].map((a) => queue.delayFor(a)),
    [5_000, 300_000, 300_000, 300_000],
  );
  const flat = new Backoff({ baseMs: 250, factor: 1, capMs: 1000, jitter: 0 });
  assert.deepEqual(
    [0, 3, 9].map((a) => flat.delayFor(a)),
    [250, 250, 250],
  );
});

test("Backoff's jitter stays within its fraction of the nominal delay", () => {
  const b = new Backoff({ baseMs: 1000, capMs: 60_000, jitter: 0.2 });
  for (let i = 0; i < 200; i++) {
    const d = b.delayFor(2);
    assert.ok(d >= 3200 && d <= 4800, `${d} is outside 4000 ± 20 %`);
  }
});
