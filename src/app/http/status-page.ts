/**
 * The status page (`GET /status` on `http.listen`): one self-contained HTML document a
 * person can leave open. It reloads itself every few seconds (a meta refresh: no script
 * at all), uses no external asset (inline CSS only), and every value passes through
 * {@link esc} — channel names, descriptions and pubkeys come from the relay, which anyone
 * in a channel can influence. The HTTP layer adds a Content-Security-Policy that forbids
 * scripts and remote loads, so an escaping slip still could not run anything.
 */

export interface StatusSnapshot {
  generatedAt: number;
  startedAt: number;
  pubkey: string;
  relay: {
    url: string;
    state: string;
    /** What the relay's NIP-11 document says (or the defaults used), as last read. */
    info?: { self?: string; nips: number[]; limits: string; problems: string[] };
  };
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
  denials: Array<{ at: number; channel?: string; author: string; reason: string }>;
  agents: Array<{ pid: number; scope?: string; spare: boolean; busy: boolean; model?: string; turns: number; rssBytes?: number }>;
  circuit: string;
  usage: {
    day: string;
    rows: Array<{ channel: string; model: string; turns: number; inputTokens: number; outputTokens: number; cost: Record<string, number> }>;
  };
  /** Fleet mode only: this daemon's id, the scopes it holds the lease of, the fleet's waiting mentions. */
  fleet?: { daemon: string; scopes: string[]; queued: number };
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
  const s = Math.max(0, Math.round((now - at) / 1000));
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

function table(caption: string, head: string[], rows: string[][], empty: string, id: string): string {
  const body = rows.length
    ? rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join("")}</tr>`).join("\n")
    : `<tr><td class="empty" colspan="${head.length}">${esc(empty)}</td></tr>`;
  return `<section id="${id}"><h2>${esc(caption)}</h2><table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead>\n<tbody>${body}</tbody></table></section>`;
}

/** The whole page; every value in `s` is escaped here. */
export function renderStatusPage(s: StatusSnapshot): string {
  const now = s.generatedAt;
  const nameOf = new Map(s.channels.map((c) => [c.id, c.name]));
  const channelCell = (id: string | undefined) =>
    id === undefined ? "–" : `${esc(nameOf.has(id) ? `#${nameOf.get(id)}` : id)} <span class="id">${esc(id.slice(0, 8))}</span>`;
  const thread = (scope: string) => {
    const slash = scope.indexOf("/");
    return slash < 0 ? "channel" : `thread ${esc(scope.slice(slash + 1, slash + 9))}`;
  };

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
    ["", "gate", "since", "turn", "channel"],
    s.turns
      .filter((t) => t.gateWait)
      .map((t) => [
        "⏳",
        esc(t.gateWait!.gates.join(", ")),
        `${esc(iso(t.gateWait!.since))} <span class="ago">(${esc(ago(now, t.gateWait!.since))})</span>`,
        esc(t.turnId),
        channelCell(t.channel),
      ]),
    "no turn waits on a gate",
    "gate-waits",
  );

  const denials = table(
    "Recent denials",
    ["when", "channel", "author", "reason"],
    s.denials.map((d) => [
      `${esc(iso(d.at))} <span class="ago">(${esc(ago(now, d.at))} ago)</span>`,
      channelCell(d.channel),
      `<span class="id">${esc(d.author)}</span>`,
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

  const costText = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([cur, amount]) => `${amount.toFixed(4)} ${cur}`)
      .join(", ") || "–";
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

  const info = s.relay.info;
  const relayInfo = info
    ? table(
        "Relay (NIP-11)",
        ["", ""],
        [
          ["key (self)", info.self ? `<span class="id">${esc(info.self)}</span>` : "none: workflow wakes are refused"],
          ["NIPs", esc(info.nips.join(", ") || "not stated")],
          ["limits", esc(info.limits)],
          ...info.problems.map((p) => ["⚠️ problem", esc(p)]),
        ],
        "",
        "relay-info",
      )
    : "";

  const fleet = s.fleet
    ? table(
        `Fleet: this daemon ${s.fleet.daemon} holds ${s.fleet.scopes.length} lease${s.fleet.scopes.length === 1 ? "" : "s"}; ${s.fleet.queued} mention${s.fleet.queued === 1 ? "" : "s"} waiting across the fleet`,
        ["channel", "scope"],
        s.fleet.scopes.map((k) => [channelCell(k.split("/")[0]), thread(k)]),
        "this daemon holds no scope lease",
        "fleet",
      )
    : "";

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
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #e3e3e3; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f0f0f0; font-weight: 600; }
.id, .ago { color: #777; font-family: ui-monospace, monospace; font-size: .85em; }
.about { color: #555; font-size: .9em; }
.empty { color: #888; font-style: italic; }
.meta { color: #555; }
</style>
</head>
<body>
<h1>buzz-bridge status</h1>
<p class="meta">agent <span class="id">${esc(s.pubkey)}</span> · relay ${esc(s.relay.url)} is <strong id="relay-state">${esc(s.relay.state)}</strong> · up ${esc(ago(now, s.startedAt))} · generated ${esc(iso(now))}, reloads every ${STATUS_REFRESH_SECONDS}s</p>
${channels}
${relayInfo}
${turns}
${waits}
${denials}
${agents}
${usage}
${fleet}
</body>
</html>
`;
}
