/**
 * The status page (`/status`) as a person sees it: Debian's Chromium, headless, driven by
 * playwright-core, loads the page from a real daemon on the dev relay. It says who the agent
 * is and whom it answers to, the version, config and last reload; it shows a turn in flight
 * while one runs (and, reloading itself, shows it gone once it ends), the turns that ended
 * (how, how long, at what cost, with a link to the thread), denials with the author's npub,
 * the agent processes; and a channel or profile name that is an HTML/script injection as
 * plain text with nothing executed. `/status.json` carries the same facts for scripts. At
 * 1280 px and at 360 px (a phone) nothing overflows the window and no header breaks.
 *
 * Chromium comes from apt (`.ci/run` installs it in CI); outside CI a missing browser
 * skips this file with the reason printed.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { approvalGate } from "./fixtures/gates-helpers.js";
import { waitFor } from "../kit/wait.js";

const CHROMIUM = "/usr/bin/chromium";
const HOSTILE = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>"'&`;
const missing = !existsSync(CHROMIUM);
if (missing && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium (apt-get install chromium)`);
const VERSION = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;

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

/**
 * Opens the status page. The page refreshes itself every 5 s (a meta refresh), and a refresh
 * that fires as the test navigates aborts the test's navigation (net::ERR_ABORTED). From
 * about:blank nothing refreshes; should a refresh win that first step, the refreshed page's
 * next one is a whole interval away.
 */
async function openStatus() {
  await page.goto("about:blank").catch((err: Error) => {
    if (!/ERR_ABORTED/.test(err.message)) throw err;
  });
  return page.goto(`${base}/status`);
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
let overrides: Record<string, unknown>;
let shots: string;

/** A kind 0 profile, so the page can show a name. */
async function name(p: World["owner"], text: string): Promise<void> {
  const c = await p.relay();
  await c.send({ kind: KIND.profile, created_at: Math.floor(Date.now() / 1000), tags: [], content: JSON.stringify({ name: text }) });
}

before(async () => {
  if (skip) return;
  w = await World.create({ channelName: HOSTILE, about: `about <b>bold</b> & "quoted"` });
  await name(w.owner, "olivia");
  await name(w.stranger, `mallory ${HOSTILE}`);
  // A `stop: wait` approval gate: every answered turn waits (⏳) until the teammate's 👍.
  const gate = await approvalGate(w, { approvers: [w.teammate.pk], countFile: join(w.dir, "approvals.txt") });
  approverPk = gate.pk;
  overrides = {
    http: { listen: "127.0.0.1:0" },
    agent: { idle_timeout: "60s" },
    mcp: { servers: { approval: gate.server } },
    gates: { enforce: "bridge", wait_poll: "1s", wait_max: "120s" },
  };
  d = await w.startDaemon(overrides);
  base = String((await d.waitLog((l) => l.evt === "daemon.started")).http);
  profile = mkdtempSync(join(tmpdir(), "bb-chromium-"));
  shots = mkdtempSync(join(tmpdir(), "bb-status-shots-"));
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
  if (shots) rmSync(shots, { recursive: true, force: true });
});

test("the page says who the agent is, whom it answers to, its version and config, and that the relay accepted its NIP-42 auth", {
  skip,
}, async () => {
  const res = await openStatus();
  assert.equal(res?.status(), 200);
  assert.match(res!.headers()["content-security-policy"] ?? "", /default-src 'none'/, "no script or remote asset may load");
  assert.equal(await page.title(), "buzz-bridge status");
  const summary = await page.locator("#summary").innerText();
  assert.match(summary, new RegExp(`agent\\s+${w.agent.npub}`), "the agent's npub");
  assert.match(summary, new RegExp(`owner\\s+(olivia )?${w.owner.npub}`), "the owner's npub");
  assert.match(summary, new RegExp(`version\\s+${VERSION.replace(/\./g, "\\.")}`));
  assert.match(summary, new RegExp(`config\\s+${d.configFile.replace(/[.]/g, "\\.")}`));
  assert.match(summary, /started\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(up \d+/);
  assert.match(summary, /last reload\s+none since start/);
  assert.match(summary, new RegExp(`relay\\s+${w.relay.url} is subscribed; NIP-42 accepted`));
  assert.doesNotMatch(await page.locator("body").innerText(), new RegExp(w.agent.pk), "no hex key where people read");
});

test("the channel, its policy and the agent processes; a hostile channel name renders as text and runs nothing", { skip }, async () => {
  await openStatus();
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

test("a running turn is shown with its elapsed time and the agent's last activity, disappears after it ends as the page reloads itself, and is listed among the recent turns as cancelled", {
  skip,
}, async () => {
  const ev = await w.owner.post("@agent #hang");
  await w.waitReaction(ev, "👀");
  await d.waitLog((l) => l.evt === "agent.session_open");
  await openStatus();
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
  await waitText("#recent tbody", new RegExp(`thread ${ev.id.slice(0, 8)}`));
  const recent = page.locator("#recent tbody tr").first();
  assert.match(await recent.innerText(), /olivia[\s\S]*✖ cancelled/, "who asked, and how it ended");
  const link = await recent.locator("a").getAttribute("href");
  assert.match(link ?? "", /^nostr:nevent1[02-9ac-hj-np-z]+$/, "a link to the thread");
});

test("a denied mention is listed under recent denials with the author's npub, name (escaped) and the reason", { skip }, async () => {
  const ev = await w.stranger.post("@agent let me in");
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === ev.id);
  await openStatus();
  // The denial is recorded once the gate has finished with the event (its 🔒 reaction
  // included), which may be just after the log line: the page's own refresh shows it.
  await waitText("#denials", new RegExp(w.stranger.npub));
  const text = await page.locator("#denials").innerText();
  assert.match(text, /not-owner/, "with the gate's reason (respond_to: owner-only)");
  assert.doesNotMatch(text, new RegExp(w.stranger.pk), "the npub, not hex");
  assert.equal(await page.locator("img").count(), 0);
  assert.equal(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned), undefined, "nothing ran");
});

test("a turn waiting on a gate shows ⏳ with the gate's name and since when; once approved it is a recent turn answered, with the usage the agent reported", {
  skip,
}, async () => {
  const ev = await w.owner.post("@agent ship the release #usage 120 45 0.0123");
  await w.waitReaction(ev, "⏳", 30_000);
  await openStatus();
  const waits = await page.locator("#gate-waits tbody").innerText();
  assert.match(waits, /⏳ approval\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/, `the gate and since when: ${waits}`);
  assert.match(await page.locator("#turns tbody").innerText(), /⏳ approval/, "the turn's row shows the wait too");
  assert.equal(await page.locator("#gate-waits th").filter({ hasText: /^$/ }).count(), 0, "every column has a header");
  const [request] = await w.waitEvents({ kinds: [KIND.message], authors: [approverPk] }, (e) => e.length > 0);
  await w.teammate.react(request!, "👍");
  await w.waitReaction(ev, "✅", 30_000);
  await waitText("#gate-waits", /no turn waits on a gate/);
  await waitText("#recent tbody", new RegExp(`thread ${ev.id.slice(0, 8)}`));
  const row = await page.locator("#recent tbody tr").first().innerText();
  assert.match(row, /olivia/);
  assert.match(row, /✅ answered/);
  assert.match(row, /120 \/ 45/, "tokens in / out");
  assert.match(row, /0\.0123 USD/, "the cost");
});

test("/status.json has the same facts for scripts: identity, relay, the turns that ended, denials", { skip }, async () => {
  const res = await fetch(`${base}/status.json`);
  assert.equal(res.status, 200);
  const s = (await res.json()) as Record<string, any>;
  assert.equal(s.version, VERSION);
  assert.equal(s.config_file, d.configFile);
  assert.equal(s.agent.npub, w.agent.npub);
  assert.deepEqual(s.owner, { npub: w.owner.npub, name: "olivia" });
  assert.equal(s.relay.auth, "accepted");
  const outcomes = (s.recent_turns as any[]).map((t) => t.outcome);
  assert.deepEqual(outcomes, ["answered", "cancelled"], "newest first");
  const answered = s.recent_turns[0];
  assert.deepEqual(answered.usage, { tokens_in: 120, tokens_out: 45, cost: { amount: 0.0123, currency: "USD" } });
  assert.deepEqual(
    answered.asked_by.map((p: { npub: string }) => p.npub),
    [w.owner.npub],
  );
  assert.match(answered.link, /^nostr:nevent1/);
  assert.ok(
    (s.denials as any[]).some((x) => x.author.npub === w.stranger.npub && x.reason === "not-owner"),
    "the denial, by npub",
  );
  assert.ok(!JSON.stringify(s).includes(w.agent.pk), "no hex key");
});

test("a reload's outcome is on the page: keys that need a restart are named, a refused file's errors are listed", { skip }, async () => {
  writeFileSync(d.configFile, stringify(w.config({ ...overrides, queue: { max_attempts: 5 } })));
  let n = d.logs.length;
  d.proc.kill("SIGHUP");
  const partial = await d.waitLog((l) => l.evt === "config.reload_partial" && d.logs.indexOf(l) >= n);
  assert.deepEqual(partial.needs_restart, ["queue.max_attempts"]);
  await openStatus();
  await waitText("#summary", /last reload\s+applied in part \S+ \(\d+s ago\); needs a restart: queue\.max_attempts/);

  writeFileSync(d.configFile, `${readFileSync(d.configFile, "utf8")}\ndefaults:\n  respond_to everyone\n`);
  n = d.logs.length;
  d.proc.kill("SIGHUP");
  await d.waitLog((l) => l.evt === "config.reload_refused" && d.logs.indexOf(l) >= n);
  await waitText("#summary", /last reload\s+refused, the old config stays[\s\S]*missing ':' after 'respond_to'/);
});

/**
 * Runs in the page (a string: the test's TypeScript has no DOM types, and tsx's helpers do
 * not exist there): the page's width against the window's, elements past the right edge,
 * headers and labels that take more than one line box (broken mid-word, as "resp/ond_/to"),
 * and how many row labels show.
 */
const FIT_PROBE = `(() => {
  const doc = document.documentElement;
  const wide = [...document.querySelectorAll("body *")]
    .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .map((e) => e.tagName.toLowerCase() + "." + e.className + ": " + (e.textContent || "").slice(0, 40));
  const lines = (e) => {
    const r = document.createRange();
    r.selectNodeContents(e);
    return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size;
  };
  const visible = (e) => e.offsetParent !== null;
  const broken = [...document.querySelectorAll("th, td .label, dt")].filter(visible).filter((e) => lines(e) > 1).map((e) => e.textContent);
  const labels = [...document.querySelectorAll("td .label")].filter(visible).length;
  return { scroll: doc.scrollWidth, inner: window.innerWidth, wide, broken, labels };
})()`;

/** PNG width from its IHDR chunk. */
const pngWidth = (png: Buffer) => png.readUInt32BE(16);

for (const width of [1280, 360]) {
  test(`at ${width} px nothing runs off the side and no header or label breaks mid-word`, { skip }, async () => {
    await page.setViewportSize({ width, height: 800 });
    await openStatus();
    const fit = (await page.evaluate(FIT_PROBE)) as { scroll: number; inner: number; wide: string[]; broken: string[]; labels: number };
    assert.deepEqual(fit.wide, [], "elements past the right edge");
    assert.ok(fit.scroll <= fit.inner, `page ${fit.scroll} px wide in a ${fit.inner} px window`);
    assert.deepEqual(fit.broken, [], "headers and labels on one line");
    if (width === 360) assert.ok(fit.labels > 0, "rows read as label: value cards");
    else assert.equal(fit.labels, 0, "columns, no labels");
    const shot = await page.screenshot({ fullPage: true, path: join(shots, `status-${width}.png`) });
    assert.equal(pngWidth(shot), width, "the full-page screenshot is as wide as the window");
  });
}
