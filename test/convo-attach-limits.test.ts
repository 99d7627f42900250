/**
 * What an agent is not given, judged in its prompt (the demo agent's `#blocks` report) and
 * at the relay's media store: an image to an agent that takes no images
 * (`DEMO_AGENT_NO_IMAGES`: its initialize answer says `image: false`) is listed with why and
 * never downloaded; files past `attachments.max_per_turn` are listed with why and never
 * downloaded. One daemon serves both cases.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { World } from "../kit/world.js";
import { imeta, PNG, upload } from "./fixtures/media.js";

let w: World;

before(async () => {
  w = await World.create();
  await w.startDaemon({ attachments: { max_per_turn: 2 }, agent: { env: { DEMO_AGENT_NO_IMAGES: "1" } } });
});
after(() => w.close());

const reportOf = async (ev: { id: string }) => (await w.waitReplies(ev as never))[0]!.content;
const listed = (report: string, name: string) => report.split("\n").find((l) => l.startsWith("listed:") && l.includes(` ${name},`)) ?? "";

test("an image to an agent that takes no images is listed with why, not downloaded, and no image block reaches it", async () => {
  const png = await upload(w.relay.httpUrl, w.owner.sk, PNG, "image/png");
  const readsBefore = w.relay.stats().mediaReads;
  const ev = await w.owner.post("@agent #blocks what is on it?", {
    tags: [imeta({ url: png.url, mime: "image/png", x: png.sha256, size: PNG.length, name: "screen.png" })],
  });
  const report = await reportOf(ev);
  assert.match(listed(report, "screen.png"), /not given to you: this agent does not take images/, report);
  assert.match(report, /block: none/, "no image block in the prompt");
  assert.equal(w.relay.stats().mediaReads, readsBefore, "the image was never downloaded");
});

test("files past attachments.max_per_turn are listed with why and not downloaded; the first ones are given", async () => {
  const files = await Promise.all(
    ["one", "two", "three"].map(async (n) => ({
      n,
      d: await upload(w.relay.httpUrl, w.owner.sk, Buffer.from(`log ${n}\n`), "text/plain"),
    })),
  );
  const readsBefore = w.relay.stats().mediaReads;
  const ev = await w.owner.post("@agent #blocks read these", {
    tags: files.map(({ n, d }) => imeta({ url: d.url, mime: "text/plain", x: d.sha256, name: `${n}.log` })),
  });
  const report = await reportOf(ev);
  assert.equal(report.split("\n").filter((l) => /^block: resource text\/plain/.test(l)).length, 2, report);
  assert.match(listed(report, "one.log"), /given to you below as a text file/);
  assert.match(listed(report, "two.log"), /given to you below as a text file/);
  assert.match(listed(report, "three.log"), /not given to you: more than attachments\.max_per_turn \(2\) files in this turn/, report);
  assert.equal(w.relay.stats().mediaReads - readsBefore, 2, "the third file was never downloaded");
});
