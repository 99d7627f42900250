/**
 * The status page (`/status`) as a person sees it: Debian's Chromium, headless, driven by
 * playwright-core, loads the page from a real daemon on the dev relay. It shows a turn in
 * flight while one runs (and, reloading itself, shows it gone once it ends), a denial,
 * the agent processes, and a channel whose name is an HTML/script injection as plain text
 * with nothing executed.
 *
 * Chromium comes from apt (`.ci/run` installs it in CI); outside CI a missing browser
 * skips this file with the reason printed.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { World, type DaemonProc } from "./fixtures/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { approvalGate } from "./fixtures/gates-helpers.js";
import { waitFor } from "./fixtures/wait.js";

const CHROMIUM = "/usr/bin/chromium";
const HOSTILE = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>"'&`;
const missing = !existsSync(CHROMIUM);
if (missing && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium (apt-get install chromium)`);
/**
 * Waits until the page's `selector` text matches, without reloading it: the page must
 * refresh itself. Fails with the last text seen.
 */
async function waitText(selector: string, re: RegExp, timeoutMs = 20_000): Promise<void> {
  let last = "";
  const matches = async () => {
    last = await page
      .locator(selector)
      .innerText()
      .catch(() => last);
    return re.test(last);
  };
  await waitFor(matches, { timeoutMs, intervalMs: 250, what: () => `${selector} to match ${re}; last seen: ${last}` });
}

const skip = missing ? `skipped: ${CHROMIUM} not found (apt-get install chromium)` : false;
if (skip) console.log(`# status-page.test.ts ${skip}`);

let w: World;
let d: DaemonProc;
let base: string;
let profile: string;
let browser: BrowserContext;
let page: Page;
let approverPk: string;

before(async () => {
  if (skip) return;
  w = await World.create({ channelName: HOSTILE, about: `about <b>bold</b> & "quoted"` });
  // A `stop: wait` approval gate: every answered turn waits (⏳) until the teammate's 👍.
  const gate = await approvalGate(w, { approvers: [w.teammate.pk], countFile: join(w.dir, "approvals.txt") });
  approverPk = gate.pk;
  d = await w.startDaemon({
    http: { listen: "127.0.0.1:0" },
    agent: { idle_timeout: "60s" },
    mcp: { servers: { approval: gate.server } },
    gates: { enforce: "bridge", wait_poll: "1s", wait_max: "120s" },
  });
  base = String((await d.waitLog((l) => l.evt === "daemon.started")).http);
  profile = mkdtempSync(join(tmpdir(), "bb-chromium-"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = browser.pages()[0] ?? (await browser.newPage());
});

after(async () => {
  await browser?.close();
  await w?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

test("the page loads with the channel, its policy and the agent processes; a hostile channel name renders as text and runs nothing", {
  skip,
}, async () => {
  const res = await page.goto(`${base}/status`);
  assert.equal(res?.status(), 200);
  assert.match(res!.headers()["content-security-policy"] ?? "", /default-src 'none'/, "no script or remote asset may load");
  assert.equal(await page.title(), "buzz-bridge status");
  const name = page.locator("#channels .name").first();
  assert.equal(await name.textContent(), `#${HOSTILE}`, "the name is shown literally");
  assert.match(await page.locator("#channels").innerText(), /owner-only/, "the channel's respond_to policy");
  assert.equal(await page.locator("img").count(), 0, "the injected <img> is text, not an element");
  assert.equal(await page.locator("script").count(), 0, "the injected <script> is text, not an element");
  assert.equal(await page.locator("b").count(), 0, "markup in the description is text too");
  assert.equal(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned), undefined, "nothing ran");
  assert.match(await page.locator("#agents").innerText(), /warm spare/, "the warm spare agent process is listed");
  assert.match(await page.locator("#agents").innerText(), /\d+\.\d MiB/, "with its memory");
});

test("a running turn is shown with its elapsed time and the agent's last activity, and disappears after it ends as the page reloads itself", {
  skip,
}, async () => {
  const ev = await w.owner.post("@agent #hang");
  await w.waitReaction(ev, "👀");
  await d.waitLog((l) => l.evt === "agent.session_open");
  await page.goto(`${base}/status`);
  const turns = page.locator("#turns tbody tr");
  assert.equal(await turns.count(), 1, "one turn in flight");
  const row = await turns.first().innerText();
  assert.ok(row.includes(`#${HOSTILE}`), `the turn's channel is named: ${row}`);
  assert.match(row, new RegExp(`thread ${ev.id.slice(0, 8)}`), "and its thread");
  assert.match(row, /\d+s/, "with the time it has been running");
  await waitText("#turns", /agent_thought_chunk/);

  await w.owner.post("!cancel", { replyTo: ev });
  await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [ev.id] }, (e) => e.length > 0);
  await d.waitLog((l) => l.evt === "turn.end" && l.status === "cancelled");
  // No goto/reload here: the page's own refresh must pick the change up.
  await waitText("#turns", /no turn is running/);
});

test("a denied mention is listed under recent denials with its reason", { skip }, async () => {
  const ev = await w.stranger.post("@agent let me in");
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === ev.id);
  await page.goto(`${base}/status`);
  // The denial is recorded once the gate has finished with the event (its 🔒 reaction
  // included), which may be just after the log line: the page's own refresh shows it.
  await waitText("#denials", new RegExp(w.stranger.pk));
  const text = await page.locator("#denials").innerText();
  assert.match(text, /not-owner/, "with the gate's reason (respond_to: owner-only)");
});

test("a turn waiting on a gate shows ⏳ with the gate's name and since when, until the gate allows it", { skip }, async () => {
  const ev = await w.owner.post("@agent ship the release");
  await w.waitReaction(ev, "⏳", 30_000);
  await page.goto(`${base}/status`);
  const waits = await page.locator("#gate-waits tbody").innerText();
  assert.match(waits, /⏳\s+approval\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/, `the gate and since when: ${waits}`);
  assert.match(await page.locator("#turns tbody").innerText(), /⏳ approval/, "the turn's row shows the wait too");
  const [request] = await w.waitEvents({ kinds: [KIND.message], authors: [approverPk] }, (e) => e.length > 0);
  await w.teammate.react(request!, "👍");
  await w.waitReaction(ev, "✅", 30_000);
  await waitText("#gate-waits", /no turn waits on a gate/);
});
