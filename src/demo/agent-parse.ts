/**
 * What the demo agent reads out of a prompt. The prompt builder (src/prompt/) owns the
 * format; this parser is deliberately tolerant and only relies on:
 *
 * - Standing context (first prompt blocks, or the session/new `systemPrompt`), read outside
 *   fenced blocks only (members' text is fenced): a line `Channel: <name>` (an optional trailing `(<id>)` is dropped), a line
 *   `Description: <about>` (a name or description in an inline code span is unwrapped), and a section starting `Team instructions:` (text on the
 *   same line or the following lines; its first non-empty line is quoted).
 * - The last event of the turn: the LAST line `Author: <who>` or `From: <who>` (leading
 *   `-`/`*` bullets allowed), and its content: the first fenced block (``` or ~~~, any
 *   length ≥ 3, closed by the same fence) after that line, else a `Content: <text>`
 *   line, else the last non-empty line of the prompt.
 * - Directives: `#word` tokens in that last event's content only, so history quoting an
 *   old `#crash` does not trigger it again.
 * - A batch: each `Message <i> of <n> for you:` block's `Event: <id>` line and the first
 *   fenced block after it, so the agent can answer every message in its own thread.
 */

export interface ParsedPrompt {
  channel?: string;
  description?: string;
  /** First non-empty line of the team instructions, when the section is present and not empty. */
  teamInstructions?: string;
  author?: string;
  asked: string;
  directives: Directives;
  /** The turn's messages when it carries more than one (empty otherwise), in order. */
  batch: Array<{ id: string; asked: string }>;
}

interface Directives {
  finalOnly: boolean;
  silent: boolean;
  permission: boolean;
  crash: boolean;
  crashAfterReply: boolean;
  hang: boolean;
  ignoreCancel: boolean;
  env: boolean;
  compact: boolean;
  stopHook: boolean;
  sysprompt: boolean;
  auth: boolean;
  firstBlock: boolean;
  /** Report the images and files the prompt carried, and its attachment listings. */
  blocks: boolean;
  /** Attach a file it writes to the reply. */
  attachFile: boolean;
  /** Report the prompt's history header. */
  history: boolean;
  /** Ask a form question (elicitation) and report the answer. */
  ask: boolean;
  progress: boolean;
  /** Answer once before anything else (a send_message that is not a progress note). */
  replyFirst: boolean;
  /** Report the session: id, prompts so far, its first prompt, model, effort, title. */
  session: boolean;
  /** End the turn with stop reason max_tokens (after replying). */
  maxTokens: boolean;
  /** End the turn with stop reason max_turn_requests (after replying). */
  maxTurnRequests: boolean;
  /** Report this usage for the turn: tokens in, tokens out, cost (USD, added to the session's running total). */
  usage?: { inputTokens: number; outputTokens: number; cost: number };
  slowMs?: number;
  /** `#hold <file>`: wait until that file exists (cancellable), then go on: a test releases the turn when it is ready. */
  holdFile?: string;
  /** Spend this long in two reported tool calls before answering. */
  busyMs?: number;
  /** `#titles <file>`: the tool calls #busy reports instead of its two (a JSON array of {title, kind?, locations?}). */
  titlesFile?: string;
  /** Pad the reply to at least this many characters (numbered filler lines). */
  longChars?: number;
  /** `#stderr <text>`: the rest of the line, written to stderr. */
  stderr?: string;
  /** `#burst <n> [<chars>]`: send_message n times at once. */
  burst?: { count: number; chars: number };
  tools: Array<{ name: string; args: Record<string, unknown> }>;
}

const line = (text: string, key: string): string | undefined => {
  const re = new RegExp(`^\\s*(?:[-*]\\s*)?(?:\\*\\*)?${key}(?:\\*\\*)?\\s*:\\s*(.+?)\\s*$`, "gim");
  // The first match: the standing context comes before any member-written text.
  for (const m of text.matchAll(re)) return m[1];
  return undefined;
};

function teamInstructions(text: string): string | undefined {
  const m = /^\s*(?:#+\s*)?(?:\*\*)?Team instructions(?:\*\*)?\s*:?[ \t]*(.*)$/im.exec(text);
  if (!m) return undefined;
  const sameLine = m[1]!.trim();
  if (sameLine) return sameLine;
  const rest = text.slice(m.index + m[0].length).split("\n");
  for (const l of rest) {
    const t = l.trim();
    if (!t || /^(`{3,}|~{3,})/.test(t)) continue;
    // The next heading-like line ends an empty section.
    if (/^(#+\s|[A-Z][A-Za-z ]{1,30}:\s*$|Channel:|Description:)/.test(t)) return undefined;
    if (/^\(none\)$|^none\.?$/i.test(t)) return undefined;
    return t;
  }
  return undefined;
}

function fencedAfter(text: string, from: number): string | undefined {
  const lines = text.slice(from).split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*(`{3,}|~{3,})/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const body: string[] = [];
    for (let j = i + 1; j < lines.length; j++) {
      const t = lines[j]!.trim();
      if (t.startsWith(fence[0]!.repeat(fence.length)) && /^(`+|~+)$/.test(t)) return body.join("\n").trim();
      body.push(lines[j]!);
    }
    return body.join("\n").trim();
  }
  return undefined;
}

function askedOf(text: string): { author?: string; asked: string } {
  const re = /^\s*(?:[-*]\s*)?(?:\*\*)?(?:author|from)(?:\*\*)?\s*:\s*(.+?)\s*$/gim;
  let last: RegExpExecArray | undefined;
  for (const m of text.matchAll(re)) last = m as RegExpExecArray;
  if (last) {
    const after = last.index + last[0].length;
    const fenced = fencedAfter(text, after);
    const content = fenced ?? line(text.slice(after), "content");
    if (content !== undefined) return { author: last[1], asked: content };
  }
  const nonEmpty = text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  return { author: last?.[1], asked: nonEmpty[nonEmpty.length - 1] ?? "" };
}

function parseDirectives(text: string): Directives {
  const has = (word: string) => new RegExp(`(^|\\s)#${word}(?=\\s|$)`, "i").test(text);
  const slow = /(?:^|\s)#slow\s+(\d+)/i.exec(text);
  const busy = /(?:^|\s)#busy\s+(\d+)/i.exec(text);
  const titles = /(?:^|\s)#titles\s+(\S+)/i.exec(text);
  const hold = /(?:^|\s)#hold\s+(\S+)/i.exec(text);
  const long = /(?:^|\s)#long\s+(\d+)/i.exec(text);
  const burst = /(?:^|\s)#burst\s+(\d+)(?:\s+(\d+))?/i.exec(text);
  const stderr = /(?:^|\s)#stderr (.+)$/im.exec(text);
  const usage = /(?:^|\s)#usage\s+(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)/i.exec(text);
  const tools: Directives["tools"] = [];
  for (const m of text.matchAll(/(?:^|\s)#tool\s+([A-Za-z0-9_.-]+)[ \t]*(\{.*\})?/gim)) {
    let args: Record<string, unknown> = {};
    if (m[2]) {
      try {
        args = JSON.parse(m[2]) as Record<string, unknown>;
      } catch {
        args = { _unparsed: m[2] };
      }
    }
    tools.push({ name: m[1]!, args });
  }
  return {
    finalOnly: has("final-only"),
    silent: has("silent"),
    permission: has("permission"),
    crash: has("crash"),
    crashAfterReply: has("crash-after-reply"),
    hang: has("hang"),
    ignoreCancel: has("ignore-cancel"),
    env: has("env"),
    compact: has("compact"),
    stopHook: has("stop-hook"),
    sysprompt: has("sysprompt"),
    auth: has("auth"),
    firstBlock: has("first-block"),
    blocks: has("blocks"),
    attachFile: has("attach-file"),
    history: has("history"),
    ask: has("ask"),
    progress: has("progress"),
    replyFirst: has("reply-first"),
    session: has("session"),
    maxTokens: has("max-tokens"),
    maxTurnRequests: has("max-turn-requests"),
    usage: usage ? { inputTokens: Number(usage[1]), outputTokens: Number(usage[2]), cost: Number(usage[3]) } : undefined,
    slowMs: slow ? Number(slow[1]) : undefined,
    holdFile: hold?.[1],
    busyMs: busy ? Number(busy[1]) : undefined,
    titlesFile: titles?.[1],
    longChars: long ? Number(long[1]) : undefined,
    burst: burst ? { count: Number(burst[1]), chars: Number(burst[2] ?? 0) } : undefined,
    stderr: stderr?.[1],
    tools,
  };
}

function batchOf(text: string): ParsedPrompt["batch"] {
  const heads = [...text.matchAll(/^Message \d+ of \d+ for you:\s*$/gm)];
  if (heads.length < 2) return [];
  const out: ParsedPrompt["batch"] = [];
  heads.forEach((h, i) => {
    const part = text.slice(h.index, heads[i + 1]?.index);
    const id = /^Event:\s*([0-9a-f]{64})\s*$/m.exec(part)?.[1];
    if (id) out.push({ id, asked: fencedAfter(part, 0) ?? "" });
  });
  return out;
}

/** A value the prompt shows in an inline code span (names, channel names, descriptions), without the span. */
function unspan(value: string | undefined): string | undefined {
  return value?.replace(/^(`+) ?(.*?) ?\1(?=$| \()/, "$2");
}

/**
 * The text with every fenced block left out. Members' messages (the history, the events)
 * are fenced by the bridge, so what is left is the bridge's own words: a teammate's or
 * another agent's message quoting "Team instructions: …" is not this channel's.
 */
function unfenced(text: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  for (const l of text.split("\n")) {
    const t = l.trim();
    const open = /^(`{3,}|~{3,})/.exec(t)?.[1];
    if (fence === undefined && open) fence = open;
    else if (fence !== undefined && t.startsWith(fence[0]!.repeat(fence.length)) && /^(`+|~+)$/.test(t)) fence = undefined;
    else if (fence === undefined) out.push(l);
  }
  return out.join("\n");
}

/** Parses the prompt text (all text blocks joined) plus the session's system prompt, if any. */
export function parsePrompt(promptText: string, systemPrompt = ""): ParsedPrompt {
  const standing = unfenced(`${systemPrompt}\n${promptText}`);
  const channelLine = line(standing, "channel");
  const { author, asked } = askedOf(promptText);
  return {
    channel: unspan(channelLine?.replace(/\s*\([^()]*\)\s*$/, "")),
    description: unspan(line(standing, "description")),
    teamInstructions: teamInstructions(standing),
    author: unspan(author),
    asked,
    directives: parseDirectives(asked),
    batch: batchOf(promptText),
  };
}
