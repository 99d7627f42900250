/**
 * The status page (`GET /status` on `http.listen`): one self-contained HTML document a
 * person can leave open, answering "is it up, what is it doing now" and "what happened":
 * who the agent is and whom it answers to, the version and config, the start and the last
 * reload, the relay and its NIP-42 state, channels, turns in flight and the last turns that
 * ended, denials, agent processes, usage, and a fleet's leases. `/status.json` serves the
 * same snapshot for scripts ({@link statusJson}).
 *
 * It reloads itself every few seconds (a meta refresh: no script at all), uses no external
 * asset (inline CSS only), and every value passes through {@link esc} — channel names,
 * descriptions and profile names come from the relay, which anyone in a channel can
 * influence. The HTTP layer adds a Content-Security-Policy that forbids scripts and remote
 * loads, so an escaping slip still could not run anything. Narrow screens (a phone, 360 px)
 * get each table row as a card of label: value lines instead of columns.
 */

/** A person as the page shows them: the npub, and the name from their profile when known. */
export interface PersonRef {
  npub: string;
  name?: string;
}

export interface StatusSnapshot {
  generatedAt: number;
  startedAt: number;
  version: string;
  configFile: string;
  agent: PersonRef;
  owner?: PersonRef;
  relay: {
    url: string;
    /** The connection: connecting, authenticated, subscribed, … */
    state: string;
    /** NIP-42: accepted, refused (with the relay's reason) or not yet. */
    auth: string;
    /** The relay's NIP-11 information document, as label → value, when the daemon read one. */
    info?: Array<[label: string, value: string]>;
  };
  /** The last SIGHUP's outcome; absent until the first. */
  reload?: { at: number; outcome: "applied" | "partial" | "refused"; needsRestart?: string[]; errors?: string[] };
  channels: Array<{
    id: string;
    name: string;
    about: string;
    type: string;
    respondTo: string;
    onDenied: string;
    queued: number;
    /** The channel's NIP-AW work status address (`nostr:naddr1…`), when `work_status: on`. */
    workStatus?: string;
  }>;
  turns: Array<{
    turnId: number;
    channel: string;
    scope: string;
    startedAt: number;
    lastActivityAt?: number;
    lastActivity?: string;
    gateWait?: { gates: string[]; since: number };
  }>;
  /** The last turns that ended, newest first. */
  recent: Array<{
    turnId: number;
    endedAt: number;
    seconds: number;
    channel: string;
    /** The thread's root event id, and a NIP-19 link to it (`nostr:nevent1…`). */
    thread: string;
    link: string;
    askedBy: PersonRef[];
    status: "answered" | "failed" | "cancelled";
    reason?: string;
    model?: string;
    usage?: { inputTokens: number; outputTokens: number; cost?: { amount: number; currency: string } };
  }>;
  denials: Array<{ at: number; channel?: string; author: PersonRef; reason: string }>;
  agents: Array<{ pid: number; scope?: string; spare: boolean; busy: boolean; model?: string; turns: number; rssBytes?: number }>;
  circuit: string;
  usage: {
    day: string;
    rows: Array<{ channel: string; model: string; turns: number; inputTokens: number; outputTokens: number; cost: Record<string, number> }>;
  };
  /** Fleet mode only: this daemon's id, the scopes it holds the lease of, the fleet's waiting mentions. */
  fleet?: { daemon: string; scopes: string[]; queued: number };
  /** Scopes waiting for the model provider's limit to reset (docs/agents.md "When the provider fails"), until when (Unix ms). */
  held?: Array<{ scope: string; channel: string; until: number }>;
}

/** Seconds between automatic reloads. */
const STATUS_REFRESH_SECONDS = 5;

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** HTML-escapes any value for text and quoted attribute positions. */
function esc(value: unknown): string {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function ago(now: number, at: number | undefined): string {
  if (at === undefined) return "–";
  return duration(Math.max(0, Math.round((now - at) / 1000)));
}

function duration(s: number): string {
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

function bytes(n: number | undefined): string {
  if (n === undefined) return "n/a";
  return n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(2)} GiB` : `${(n / (1 << 20)).toFixed(1)} MiB`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

/** A time in a table cell, kept on one line. */
const when = (ms: number) => `<span class="time">${esc(iso(ms))}</span>`;

const shortKey = (npub: string) => `${npub.slice(0, 10)}…${npub.slice(-4)}`;

/** A person in a table: the name (or a short npub), the full npub on hover. */
function who(p: PersonRef): string {
  return `<span class="person" title="${esc(p.npub)}">${esc(p.name ?? shortKey(p.npub))}</span>`;
}

/** A person whose key the reader may need (the agent, the owner, a denied author): name and full npub. */
function whoWithKey(p: PersonRef): string {
  return `${p.name ? `${esc(p.name)} ` : ""}<span class="key">${esc(p.npub)}</span>`;
}

function costText(c: Record<string, number> | undefined): string {
  const parts = Object.entries(c ?? {}).map(([cur, amount]) => `${amount.toFixed(4)} ${cur}`);
  return parts.join(", ") || "–";
}

/**
 * A table whose cells also carry their column's label, shown before the value when the
 * screen is too narrow for columns (the CSS below turns rows into cards there).
 */
function table(caption: string, head: string[], rows: string[][], empty: string, id: string): string {
  const body = rows.length
    ? rows.map((r) => `<tr>${r.map((c, i) => `<td><span class="label">${esc(head[i])}</span>${c}</td>`).join("")}</tr>`).join("\n")
    : `<tr><td class="empty" colspan="${head.length}">${esc(empty)}</td></tr>`;
  return `<section id="${id}"><h2>${esc(caption)}</h2><table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead>\n<tbody>${body}</tbody></table></section>`;
}

function reloadText(r: StatusSnapshot["reload"], now: number): string {
  if (!r) return "none since start";
  const at = `${esc(iso(r.at))} <span class="ago">(${esc(ago(now, r.at))} ago)</span>`;
  const restart = r.needsRestart?.length ? `; needs a restart: ${r.needsRestart.map((k) => `<code>${esc(k)}</code>`).join(", ")}` : "";
  const errors = r.errors?.length ? `<ul class="errors">${r.errors.map((e) => `<li>${esc(e)}</li>`).join("")}</ul>` : "";
  const outcome = { applied: "applied", partial: "applied in part", refused: "refused, the old config stays" }[r.outcome];
  return `<strong class="reload-${esc(r.outcome)}">${esc(outcome)}</strong> ${at}${restart}${errors}`;
}

/** The whole page; every value in `s` is escaped here. */
export function renderStatusPage(s: StatusSnapshot): string {
  return page(s.generatedAt, statusSections(s));
}

/** A team's page (app/daemon/team.ts): each agent's sections under its id, in the config's order. */
export function renderTeamStatusPage(agents: { id: string; snapshot: StatusSnapshot }[]): string {
  const now = agents[0]?.snapshot.generatedAt ?? Date.now();
  const body = agents.length
    ? agents
        .map(
          ({ id, snapshot }) =>
            `<section class="team-agent" id="agent-${esc(id)}">\n<h2>agent ${esc(id)}</h2>\n${statusSections(snapshot)}\n</section>`,
        )
        .join("\n")
    : `<p class="empty">no agent is running</p>`;
  return page(now, body);
}

function statusSections(s: StatusSnapshot): string {
  const now = s.generatedAt;
  const nameOf = new Map(s.channels.map((c) => [c.id, c.name]));
  const channelCell = (id: string | undefined) =>
    id === undefined
      ? "–"
      : `<span class="name">${esc(nameOf.has(id) ? `#${nameOf.get(id)}` : id)}</span> <span class="id">${esc(id.slice(0, 8))}</span>`;
  const thread = (scope: string) => {
    const slash = scope.indexOf("/");
    return slash < 0 ? "channel" : `thread ${esc(scope.slice(slash + 1, slash + 9))}`;
  };

  const summary: Array<[string, string]> = [
    ["agent", whoWithKey(s.agent)],
    ["owner", s.owner ? whoWithKey(s.owner) : "none configured (owner-only channels answer nobody)"],
    ["version", esc(s.version)],
    ["config", `<span class="path">${esc(s.configFile)}</span>`],
    ["started", `${esc(iso(s.startedAt))} <span class="ago">(up ${esc(ago(now, s.startedAt))})</span>`],
    ["last reload", reloadText(s.reload, now)],
    [
      "relay",
      `<span class="path">${esc(s.relay.url)}</span> is <strong id="relay-state">${esc(s.relay.state)}</strong>; NIP-42 <span id="relay-auth">${esc(s.relay.auth)}</span>`,
    ],
    ...(s.relay.info ?? []).map(([label, value]): [string, string] => [`relay ${label}`, esc(value)]),
    ["agent circuit", esc(s.circuit)],
  ];
  const about = `<section id="summary"><dl>${summary.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("\n")}</dl></section>`;

  const channels = table(
    "Channels",
    ["channel", "type", "respond_to", "on_denied", "queued"],
    s.channels.map((c) => [
      `<span class="name">${esc(`#${c.name}`)}</span> <span class="id">${esc(c.id)}</span>${c.about ? `<div class="about">${esc(c.about)}</div>` : ""}${c.workStatus ? ` <a class="work-status" href="${esc(c.workStatus)}">work status</a>` : ""}`,
      esc(c.type),
      esc(c.respondTo),
      esc(c.onDenied),
      esc(c.queued),
    ]),
    "not listening in any channel",
    "channels",
  );

  const turns = table(
    "Turns in flight",
    ["turn", "channel", "scope", "running for", "agent's last activity", "gate"],
    s.turns.map((t) => [
      esc(t.turnId),
      channelCell(t.channel),
      thread(t.scope),
      esc(ago(now, t.startedAt)),
      t.lastActivityAt === undefined
        ? "none yet"
        : `${esc(t.lastActivity ?? "")} <span class="ago">${esc(ago(now, t.lastActivityAt))} ago</span>`,
      t.gateWait ? `⏳ ${esc(t.gateWait.gates.join(", "))}` : "–",
    ]),
    "no turn is running",
    "turns",
  );

  const waits = table(
    "Gate waits",
    ["gate", "since", "turn", "channel"],
    s.turns
      .filter((t) => t.gateWait)
      .map((t) => [
        `⏳ ${esc(t.gateWait!.gates.join(", "))}`,
        `${when(t.gateWait!.since)} <span class="ago">(${esc(ago(now, t.gateWait!.since))})</span>`,
        esc(t.turnId),
        channelCell(t.channel),
      ]),
    "no turn waits on a gate",
    "gate-waits",
  );

  const outcomeText = { answered: "✅ answered", failed: "⚠️ failed", cancelled: "✖ cancelled" };
  const recent = table(
    "Recent turns (the last 50, newest first)",
    ["ended", "channel", "thread", "asked by", "outcome", "took", "tokens in / out", "cost"],
    s.recent.map((t) => [
      `${when(t.endedAt)} <span class="ago">(${esc(ago(now, t.endedAt))} ago)</span>`,
      channelCell(t.channel),
      `<a href="${esc(t.link)}">thread ${esc(t.thread.slice(0, 8))}</a>`,
      t.askedBy.length ? t.askedBy.map(who).join(", ") : "–",
      `<span class="outcome-${esc(t.status)}">${esc(outcomeText[t.status])}</span>${t.reason ? `<div class="reason">${esc(t.reason)}</div>` : ""}`,
      esc(duration(Math.round(t.seconds))),
      t.usage ? `${esc(t.usage.inputTokens)} / ${esc(t.usage.outputTokens)}` : "–",
      t.usage?.cost ? esc(costText({ [t.usage.cost.currency]: t.usage.cost.amount })) : "–",
    ]),
    "no turn has ended since start",
    "recent",
  );

  const denials = table(
    "Recent denials",
    ["when", "channel", "author", "reason"],
    s.denials.map((d) => [
      `${when(d.at)} <span class="ago">(${esc(ago(now, d.at))} ago)</span>`,
      channelCell(d.channel),
      whoWithKey(d.author),
      esc(d.reason),
    ]),
    "no denials since start",
    "denials",
  );

  const agents = table(
    `Agent processes (circuit ${s.circuit})`,
    ["pid", "serves", "state", "model", "turns", "memory (with children)"],
    s.agents.map((a) => [
      esc(a.pid),
      a.spare ? "warm spare" : `${channelCell(a.scope?.split("/")[0])} ${a.scope ? thread(a.scope) : ""}`,
      a.spare ? "ready" : a.busy ? "working" : "idle",
      esc(a.model ?? "–"),
      esc(a.turns),
      esc(bytes(a.rssBytes)),
    ]),
    "no agent process is running",
    "agents",
  );

  const usage = table(
    `Usage today (${s.usage.day}, UTC, since the daemon started)`,
    ["channel", "model", "turns", "tokens in", "tokens out", "cost"],
    s.usage.rows.map((u) => [
      channelCell(u.channel),
      esc(u.model),
      esc(u.turns),
      esc(u.inputTokens),
      esc(u.outputTokens),
      esc(costText(u.cost)),
    ]),
    "no usage reported today",
    "usage",
  );

  const fleet = s.fleet
    ? table(
        `Fleet: this daemon ${s.fleet.daemon} holds ${s.fleet.scopes.length} lease${s.fleet.scopes.length === 1 ? "" : "s"}; ${s.fleet.queued} mention${s.fleet.queued === 1 ? "" : "s"} waiting across the fleet`,
        ["channel", "scope"],
        s.fleet.scopes.map((k) => [channelCell(k.split("/")[0]), thread(k)]),
        "this daemon holds no scope lease",
        "fleet",
      )
    : "";

  const held = s.held?.length
    ? table(
        "Held for the model provider's limit (answered when it resets; !cancel ends the wait)",
        ["channel", "scope", "until"],
        s.held.map((h) => [channelCell(h.channel), thread(h.scope), esc(iso(h.until))]),
        "no scope is held",
        "held",
      )
    : "";

  return [about, channels, turns, waits, held, recent, denials, agents, usage, fleet].join("\n");
}

function page(now: number, sections: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="${STATUS_REFRESH_SECONDS}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>buzz-bridge status</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d1d1f; background: #fafafa; }
h1 { font-size: 1.3rem; margin: 0 0 .3rem; }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .2rem 1rem; margin: .6rem 0; }
dt { color: #555; font-weight: 600; white-space: nowrap; }
dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #e3e3e3; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; white-space: nowrap; }
td { overflow-wrap: break-word; }
/* What people and the relay write may be one long word: it may break anywhere, figures and times do not. */
.name, .person, .about, .reason, .key, .path, .id, dd, .errors { overflow-wrap: anywhere; }
a, .time { white-space: nowrap; }
.id, .ago, .key, .path, code { color: #777; font-family: ui-monospace, monospace; font-size: .85em; }
.key, .path { color: #444; }
.about, .reason { color: #555; font-size: .9em; }
.empty { color: #888; font-style: italic; }
.meta { color: #555; }
.errors { margin: .2rem 0 0; padding-left: 1.2rem; color: #a40000; }
.reload-refused, .outcome-failed { color: #a40000; }
.label { display: none; }
@media (max-width: 640px) {
  body { margin: .6rem; }
  dl { grid-template-columns: minmax(0, 1fr); gap: 0; }
  dt { margin-top: .4rem; }
  table, tbody, tr, td { display: block; width: auto; }
  thead { display: none; }
  tr { border-bottom: 1px solid #d0d0d0; padding: .3rem 0; }
  td { border: none; padding: .1rem .5rem; }
  td .label { display: inline-block; min-width: 8.5em; margin-right: .4rem; color: #666; font-weight: 600; white-space: nowrap; }
}
</style>
</head>
<body>
<h1>buzz-bridge status</h1>
<p class="meta">generated ${esc(iso(now))}, reloads every ${STATUS_REFRESH_SECONDS}s · the same as JSON: <a href="status.json">status.json</a></p>
${sections}
</body>
</html>
`;
}

const isoOrNull = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
const person = (p: PersonRef) => ({ npub: p.npub, name: p.name ?? null });

/**
 * `/status.json`: the page's snapshot for scripts, keys in snake_case like the log lines,
 * times as ISO 8601, people as npubs.
 */
export function statusJson(s: StatusSnapshot): unknown {
  return {
    generated_at: isoOrNull(s.generatedAt),
    started_at: isoOrNull(s.startedAt),
    version: s.version,
    config_file: s.configFile,
    agent: person(s.agent),
    owner: s.owner ? person(s.owner) : null,
    relay: { url: s.relay.url, state: s.relay.state, auth: s.relay.auth, info: s.relay.info ? Object.fromEntries(s.relay.info) : null },
    last_reload: s.reload
      ? { at: isoOrNull(s.reload.at), outcome: s.reload.outcome, needs_restart: s.reload.needsRestart ?? [], errors: s.reload.errors ?? [] }
      : null,
    circuit: s.circuit,
    channels: s.channels.map((c) => ({
      id: c.id,
      name: c.name,
      about: c.about,
      type: c.type,
      respond_to: c.respondTo,
      on_denied: c.onDenied,
      queued: c.queued,
    })),
    turns_in_flight: s.turns.map((t) => ({
      turn: t.turnId,
      channel: t.channel,
      scope: t.scope,
      started_at: isoOrNull(t.startedAt),
      last_activity: t.lastActivity ?? null,
      last_activity_at: isoOrNull(t.lastActivityAt),
      gate_wait: t.gateWait ? { gates: t.gateWait.gates, since: isoOrNull(t.gateWait.since) } : null,
    })),
    recent_turns: s.recent.map((t) => ({
      turn: t.turnId,
      ended_at: isoOrNull(t.endedAt),
      seconds: t.seconds,
      channel: t.channel,
      thread: t.thread,
      link: t.link,
      asked_by: t.askedBy.map(person),
      outcome: t.status,
      reason: t.reason ?? null,
      model: t.model ?? null,
      usage: t.usage ? { tokens_in: t.usage.inputTokens, tokens_out: t.usage.outputTokens, cost: t.usage.cost ?? null } : null,
    })),
    denials: s.denials.map((d) => ({ at: isoOrNull(d.at), channel: d.channel ?? null, author: person(d.author), reason: d.reason })),
    agents: s.agents.map((a) => ({
      pid: a.pid,
      scope: a.scope ?? null,
      spare: a.spare,
      busy: a.busy,
      model: a.model ?? null,
      turns: a.turns,
      rss_bytes: a.rssBytes ?? null,
    })),
    usage_today: {
      day: s.usage.day,
      rows: s.usage.rows.map((u) => ({
        channel: u.channel,
        model: u.model,
        turns: u.turns,
        tokens_in: u.inputTokens,
        tokens_out: u.outputTokens,
        cost: u.cost,
      })),
    },
    fleet: s.fleet ? { daemon: s.fleet.daemon, scopes: s.fleet.scopes, queued: s.fleet.queued } : null,
    held: (s.held ?? []).map((h) => ({ scope: h.scope, channel: h.channel, until: new Date(h.until).toISOString() })),
  };
}
