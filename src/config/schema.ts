/**
 * The configuration schema (docs/configuration.md) as zod. Every key has a default except
 * `identity` and `relay.url`; objects are strict so a typo is an error, not a silent
 * default. Durations become milliseconds and pubkeys lowercase hex here, once, so the
 * rest of the code never parses them again.
 *
 * `config/buzz-bridge.schema.json` is generated from this file (`buzz-bridge schema`);
 * a test fails when it is stale.
 */
import { z } from "zod";
import { parseDuration, DURATION_PATTERN } from "./duration.js";
import { parsePubkey } from "./keys.js";
import { formatSize, parseSize, SIZE_PATTERN } from "./size.js";
import { PRESET_NAMES, PRESETS, type PresetName } from "../presets/index.js";

/** Names of keys whose values are durations, so `check` can print them back as `15m`. */
export const DURATION_KEYS = new Set<string>();

function duration(key: string, fallback: string) {
  DURATION_KEYS.add(key);
  return z
    .string()
    .regex(new RegExp(DURATION_PATTERN), { message: `bad duration: write it as 90s, 15m or 2h` })
    .default(fallback)
    .transform((s) => parseDuration(s)!)
    .describe(`duration (e.g. 90s, 15m, 2h); default ${fallback}`);
}

/** Names of keys whose values are sizes, so `check` can print them back as `256KiB`. */
export const SIZE_KEYS = new Set<string>();

/** A size in bytes, written `256KiB`, `10MiB`, `500KB` or as a number of bytes; at least 1 byte, at most `max`. */
function size(key: string, fallback: string, max: number) {
  SIZE_KEYS.add(key);
  return z
    .union([
      z.number().int(),
      z.string().regex(new RegExp(SIZE_PATTERN), { message: "bad size: write it as 256KiB, 10MiB or a number of bytes" }),
    ])
    .default(fallback)
    .transform((v) => (typeof v === "number" ? v : parseSize(v)!))
    .refine((n) => n >= 1 && n <= max, { message: `must be between 1 byte and ${formatSize(max)}` })
    .describe(`size (e.g. 256KiB, 10MiB, or bytes); default ${fallback}, at most ${formatSize(max)}`);
}

const pubkey = z
  .string()
  .transform((s, ctx) => {
    try {
      return parsePubkey(s);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: `bad pubkey: ${(err as Error).message}` });
      return z.NEVER;
    }
  })
  .describe("npub1… or 64-character hex public key");

const stringMap = z.record(z.string(), z.string());

const RespondTo = z.enum(["owner-only", "allowlist", "anyone", "nobody"]);
const OnDenied = z.enum(["silent", "react", "reply"]);
const ReplyFallback = z.enum(["final_text", "notice", "off"]);
export type ReplyFallbackMode = z.output<typeof ReplyFallback>;
/**
 * What a message does when it arrives in a scope whose turn is running: `steer` it into the
 * turn (natively when the agent offers steering, else cancel and re-prompt the same session
 * with it merged), `queue` it for the next turn, `interrupt` the turn with it (it supersedes
 * the earlier request), or `owner-interrupt`: interrupt for the owner's messages, queue others.
 */
const MidTurn = z.enum(["steer", "queue", "interrupt", "owner-interrupt"]);
export type MidTurnMode = z.output<typeof MidTurn>;
/**
 * Whether people continue a conversation with the agent without mentioning it again: a
 * reply in a thread it is in (`thread`), also a top-level message in a channel it is active
 * in (`channel`), or only mentions (`off`). See docs/conversations.md.
 */
const Participation = z.enum(["thread", "channel", "off"]);

/**
 * Buzz relays take event content up to 256 KiB (docs/protocol.md "Buzz Desktop"); a profile
 * that cannot fit would be refused at every start, so it is a config error instead.
 */
export const PROFILE_MAX_BYTES = 262_144;

const profileText = (what: string) => z.string().min(1, { message: `${what} must not be empty; leave it out instead` });

/** The agent's kind 0 profile (docs/protocol.md "Buzz Desktop"): what Desktop shows and mentions it by. */
const profile = z
  .strictObject({
    name: profileText("name").optional().describe("the profile's name; default the agent's id in a team, else agent"),
    display_name: profileText("display_name")
      .optional()
      .describe("the name Desktop shows and people type after @; also the directory entry's name; default name"),
    about: z.string().optional().describe("a line or two on what the agent does"),
    picture: z
      .string()
      .refine((u) => /^https:\/\/[^\s/]+/.test(u), { message: "picture must be an https:// URL (Desktop loads avatars over https only)" })
      .optional()
      .describe("the avatar: an https:// URL"),
  })
  .refine((p) => Buffer.byteLength(JSON.stringify(p), "utf8") <= PROFILE_MAX_BYTES, {
    message: `the profile is larger than a Buzz relay accepts (${PROFILE_MAX_BYTES} bytes of JSON); shorten about`,
  })
  .describe("the agent's kind 0 profile, published at start and when it changes, merged into the profile on the relay");

const identity = z.strictObject({
  secret_key: z.string().optional().describe("the agent's nsec or 64-hex secret key; prefer ${ENV} or secret_key_file"),
  secret_key_file: z
    .string()
    .optional()
    .describe("file holding the nsec; must not be group/world readable; relative to the config file's directory"),
  owner: pubkey.optional().describe("whom owner-only means, and who may send !cancel/!rotate/!status/!shutdown"),
  auth_tag: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe(
      'the NIP-OA owner attestation of this agent: the JSON text ["auth","<owner hex>","<conditions>","<sig hex>"] (e.g. ${BUZZ_AUTH_TAG}) or that list in YAML; verified at start, its owner wins over identity.owner',
    ),
  auth_tag_file: z.string().optional().describe("file holding the NIP-OA auth tag JSON (instead of auth_tag)"),
  profile: profile.optional(),
  directory: z
    .enum(["on", "off"])
    .default("on")
    .describe(
      "on (default): publish the agent's directory entry (kind 10100) so Buzz Desktop offers it in the @-picker, merged into the record on the relay; off: never write it",
    ),
});

const relay = z.strictObject({
  url: z
    .string()
    .refine((u) => u === "embedded" || /^wss?:\/\/[^\s/]+/.test(u), { message: "expected ws://host, wss://host or embedded" })
    .describe("the Buzz relay's WebSocket URL, or `embedded` to start the development relay in-process"),
  seed: z
    .string()
    .optional()
    .describe("with url: embedded, the dev relay's seed file (channels, members); relative to the config file's directory"),
  presence: z
    .boolean()
    .default(true)
    .describe("publish kind 20001 presence (online every 60s, Buzz keeps it 180s; offline on shutdown); default true"),
  typing: z.boolean().default(true).describe("publish kind 20002 typing indicators while a turn runs; default true"),
  publish_timeout: duration("publish_timeout", "10s"),
  frame_quota: z
    .strictObject({
      frames: z.number().int().min(1).default(50).describe("frames per window; default 50"),
      window: duration("window", "5s"),
      share: z
        .number()
        .gt(0)
        .max(1)
        .default(1)
        .describe(
          "this daemon's part of the key's quota, 0 < share ≤ 1; default 1. The daemons of a fleet (state.backend: postgres) share one bucket at the relay: give each 1/N, e.g. 0.5 for two",
        ),
    })
    .prefault({})
    .describe(
      "the bridge's own budget of frames to the relay, mirroring Buzz's quota of 50 per 5s per key, which counts every WebSocket frame and every HTTP bridge call of the identity; a stricter quota in the relay's NIP-11 wins. Replies and notices wait for room, typing and presence are dropped when it is short",
    ),
});

export const SandboxModeSchema = z.enum(["auto", "bubblewrap", "off"]);
export const NetworkModeSchema = z.enum(["on", "off"]);
/** off < auto < bubblewrap and on < off: a channel may only move these to the right. */
const SANDBOX_ORDER = ["off", "auto", "bubblewrap"];
const NETWORK_ORDER = ["on", "off"];

const sandboxBind = z.strictObject({
  path: z.string().min(1).describe("a host path, mounted at the same path inside the sandbox; relative to the config file"),
  mode: z.enum(["ro", "rw"]).default("ro").describe("ro (default) or rw"),
});

/** The agent command when neither agent.command nor agent.preset names one. */
export const DEFAULT_AGENT_COMMAND = "claude-agent-acp";

const provider = z
  .strictObject({
    base_url: z
      .string()
      .regex(/^https?:\/\/[^\s/]+/, { message: "expected an http:// or https:// URL" })
      .describe(
        "the endpoint's base URL as the agent's own setting takes it (e.g. http://127.0.0.1:4000 for LiteLLM, https://openrouter.ai/api/v1)",
      ),
    model: z.string().min(1).optional().describe("the model name at that endpoint"),
  })
  .describe("a gateway or self-hosted model endpoint, mapped onto the preset's own settings (docs/agents.md)");

const agent = z.strictObject({
  preset: z
    .enum(PRESET_NAMES)
    .optional()
    .describe(
      "a known agent: its command, arguments, environment and settings files (docs/agents.md); agent.command/args/env override its parts",
    ),
  provider: provider.optional(),
  command: z.string().min(1).optional().describe("the ACP agent executable; default the preset's command, else claude-agent-acp"),
  args: z.array(z.string()).optional().describe("the agent's arguments; with a preset, they replace the preset's own (default [])"),
  env: stringMap.default({}).describe("added to the agent's cleaned environment (over the preset's); the bridge's secret key never is"),
  cwd: z
    .string()
    .optional()
    .describe(
      "agent working directory; {channel} = the channel's name slug and a hash of its id (a directory per channel id); created if missing; relative to the config file's directory; default <state_dir>/work/{channel}",
    ),
  session_scope: z.enum(["thread", "channel"]).default("thread"),
  max_concurrent: z.number().int().min(1).max(64).default(4).describe("agent processes at once; default 4"),
  idle_timeout: duration("idle_timeout", "15m"),
  max_turn: duration("max_turn", "2h"),
  idle_close: duration("idle_close", "10m"),
  cancel_grace: duration("cancel_grace", "5s"),
  warm_spare: z.boolean().default(true).describe("keep one initialized agent process ready; default true"),
  permissions: z.enum(["allow", "deny", "ask-owner"]).default("allow"),
  permission_timeout: duration("permission_timeout", "10m"),
  mode: z.string().optional().describe("session mode to select after session/new (session/set_mode)"),
  auth_method: z.string().optional().describe("ACP authenticate with this method id after initialize (codex-acp: api-key)"),
  persona: z.string().default("").describe("the agent's own standing instructions, sent before team instructions"),
  // Session settings (the Rust bridge's BUZZ_ACP_MODEL, _EFFORT_LEVEL, _MAX_TURNS_PER_SESSION, _INITIAL_MESSAGE).
  model: z
    .string()
    .min(1)
    .optional()
    .describe(
      "model to select after every session/new, through the agent's model config option or its model selector; a model it does not offer fails the turn",
    ),
  effort: z
    .string()
    .min(1)
    .optional()
    .describe(
      "reasoning effort to select after every session/new, through the agent's thought_level config option; a value it does not offer fails the turn",
    ),
  max_turns_per_session: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      "start a new agent session after this many turns (0 = never); sessions also rotate after the stop reasons max_tokens and max_turn_requests",
    ),
  initial_message: z
    .string()
    .optional()
    .describe("sent as its own first prompt in every brand-new session, before the first mention's prompt"),
  sandbox: SandboxModeSchema.default("auto").describe(
    "auto (default): bubblewrap when it works here, else off with a warning; bubblewrap: required; off",
  ),
  sandbox_binds: z
    .array(sandboxBind)
    .default([])
    .describe("extra host paths a sandboxed agent sees (a package cache, a git config, a toolchain under /opt)"),
  network: NetworkModeSchema.default("on").describe(
    "on (default): a sandboxed agent's own network, outbound only, the host's loopback out of reach but for the loopback ports this config names for agents and their servers; off: no network at all",
  ),
});

/** A channel's agent overrides: only towards stricter (see crossCheck). */
const channelAgent = z.strictObject({
  sandbox: SandboxModeSchema.optional(),
  network: NetworkModeSchema.optional(),
});

/**
 * A downstream tool call that outlives this is cancelled and answered with an error the agent
 * can act on, below `agent.idle_timeout`'s default (15m) so the agent hears of it before its
 * turn is given up for silence. A server whose tools run longer sets its own `timeout`.
 */
export const DEFAULT_MCP_TIMEOUT = "10m";

const mcpServer = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: stringMap.default({}),
  cwd: z.string().optional().describe("the server's working directory, relative to the config file's directory; default the agent's cwd"),
  prefix: z.boolean().default(true).describe("false keeps tool names as they are (the dev shell stays `shell`)"),
  stop: z.enum(["reprompt", "wait"]).default("reprompt").describe("how the bridge treats this server's _Stop objections"),
  on_error: z
    .enum(["allow", "object"])
    .optional()
    .describe(
      "a hook that errors or times out, or a stop: wait server that is not running when _Stop is due, counts as this; default object for a stop: wait server (a human approval fails closed), allow otherwise",
    ),
  pre_tool: z
    .enum(["block", "advise"])
    .optional()
    .describe(
      "ask this server's _PreToolUse before every tool call through the MCP slot (and its _PostToolUse after): block = its text stops the call, and a block gate that is down, errors or misses mcp.pre_tool_deadline stops it too; advise = its text is put before the result; absent = not asked",
    ),
  timeout: duration("timeout", DEFAULT_MCP_TIMEOUT).describe(
    `how long one tool call may take (progress notifications restart the clock); then it is cancelled and the agent gets an error naming this key; default ${DEFAULT_MCP_TIMEOUT}`,
  ),
  hold_replies: z
    .boolean()
    .default(false)
    .describe(
      "true on a stop: wait server: the agent's send_message posts are held until this gate allows the turn to end, then posted in order; dropped with one notice when the wait is cancelled or given up; default false",
    ),
});
/** A server's `on_error` when the config leaves it out: a `stop: wait` gate (a human approval) fails closed. */
export function defaultOnError(stop: "reprompt" | "wait"): "allow" | "object" {
  return stop === "wait" ? "object" : "allow";
}
const mcpServerResolved = mcpServer
  .superRefine((s, ctx) => {
    if (s.hold_replies && s.stop !== "wait")
      ctx.addIssue({
        code: "custom",
        path: ["hold_replies"],
        message:
          "hold_replies: true holds the agent's posts until this server approves, which only a stop: wait server does; set stop: wait on it, or remove hold_replies",
      });
  })
  .transform((s) => ({ ...s, on_error: s.on_error ?? defaultOnError(s.stop) }));
export type McpServerConfig = z.output<typeof mcpServerResolved>;

/** Server names: letters, digits and `-` (they become tool-name prefixes). */
export const SERVER_NAME_PATTERN = /^[A-Za-z0-9-]+$/;

/** The config's `mcp` section; a proxy's `--manifest` file has this shape too (proxy/manifest.ts). */
export const mcpSchema = z.strictObject({
  servers: z
    .record(
      z.string().regex(SERVER_NAME_PATTERN, {
        message:
          "server names use letters, digits and - only ('_' separates a server's name from its tools' names in the proxy, and '__' is the agent's own separator)",
      }),
      mcpServerResolved,
    )
    .default({}),
  hook_deadline: duration("hook_deadline", "2s"),
  list_timeout: duration("list_timeout", "15s"),
  pre_tool_deadline: duration("pre_tool_deadline", "2s").describe(
    "how long the pre_tool servers together may take to answer _PreToolUse (and _PostToolUse) for one tool call; a block gate that has not answered by then blocks the call",
  ),
  transport: z
    .enum(["auto", "stdio", "http"])
    .default("auto")
    .describe(
      "how each agent session reaches its MCP slot: auto (default) serves it from the daemon over Streamable HTTP on loopback when the agent advertises mcpCapabilities.http and has network, else the stdio proxy; http requires the daemon's endpoint; stdio always the mcp-proxy process",
    ),
});

const gates = z.strictObject({
  enforce: z.enum(["auto", "bridge", "agent", "off"]).default("auto"),
  max_rejections: z.number().int().min(0).max(100).default(3),
  wait_poll: duration("wait_poll", "10s"),
  wait_max: duration("wait_max", "30m"),
});

/** The per-channel policy keys; `defaults` has them all, a channel entry overrides any. */
const policyShape = {
  respond_to: RespondTo,
  allow: z.array(pubkey),
  on_denied: OnDenied,
  team_instructions: z.string(),
  require_mention: z.boolean(),
  kinds: z.array(z.number().int().min(0)),
  mcp: z.array(z.string()),
  reply_fallback: ReplyFallback,
  history: z.number().int().min(0).max(100),
  mid_turn: MidTurn,
  participation: Participation,
  work_status: z.enum(["on", "off"]),
  tool_titles: z.enum(["brief", "full"]),
  reply_placement: z.enum(["thread", "flat"]),
};

const defaults = z.strictObject({
  respond_to: policyShape.respond_to.default("owner-only"),
  allow: policyShape.allow.default([]),
  on_denied: policyShape.on_denied.default("react"),
  team_instructions: policyShape.team_instructions.default(""),
  require_mention: policyShape.require_mention.default(true),
  kinds: policyShape.kinds.default([9]),
  mcp: policyShape.mcp.optional().describe("which mcp.servers sessions get; default all of them"),
  reply_fallback: policyShape.reply_fallback.default("final_text"),
  history: policyShape.history.default(12).describe("thread messages fetched into each prompt; default 12"),
  mid_turn: policyShape.mid_turn.default("steer"),
  participation: policyShape.participation
    .default("thread")
    .describe(
      "thread (default): replies in a thread the agent is in wake it without a mention; channel: also top-level messages where it is active; off: mentions only",
    ),
  work_status: policyShape.work_status
    .default("on")
    .describe(
      "on (default): publish the agent's work status (NIP-AW kind 30181: status, model, redacted tool titles) for the channel's members while a turn runs; off: never",
    ),
  tool_titles: policyShape.tool_titles
    .default("brief")
    .describe(
      "what members see of a tool call in the work status and the \"still working\" note — brief (default): its kind and name only (shell, fetch, send_message; a file tool's file unless secret-shaped), no argument text; full: the agent's whole title, through the redactor",
    ),
  reply_placement: policyShape.reply_placement
    .default("thread")
    .describe(
      "thread (default): the answer to a top-level message goes in that message's thread; flat: it is posted top-level, with a p tag to the asker (a message inside a thread is answered in that thread either way)",
    ),
});

/** Buzz names a channel by a lowercase hyphenated UUID (its `h` tag), never by its display name. */
const CHANNEL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A channel id as Buzz writes it; a channel *name* gets a hint instead of a later "not a member". */
function channelIdSchema(allowAll: boolean) {
  return z
    .string()
    .superRefine((id, ctx) => {
      if ((allowAll && id === "*") || CHANNEL_UUID.test(id)) return;
      const looksLikeName = /^#?[\p{L}\p{N} _.-]+$/u.test(id) && !/^[0-9a-f-]+$/i.test(id);
      const all = allowAll ? ' or "*"' : "";
      ctx.addIssue({
        code: "custom",
        message: looksLikeName
          ? `'${id}' looks like a channel name; channels are given by their UUID (e.g. 6f1c2a4e-0000-4000-8000-000000000001)${all} — \`buzz-bridge doctor\` lists each channel's name and UUID`
          : `'${id}' is not a channel UUID (8-4-4-4-12 hex digits)${all}`,
      });
    })
    .transform((id) => id.toLowerCase());
}

const channelId = channelIdSchema(true).describe('channel UUID, or "*" for every channel the identity is a member of');

const channel = z.strictObject({
  id: channelId,
  respond_to: policyShape.respond_to.optional(),
  allow: policyShape.allow.optional(),
  on_denied: policyShape.on_denied.optional(),
  team_instructions: policyShape.team_instructions.optional(),
  require_mention: policyShape.require_mention.optional(),
  kinds: policyShape.kinds.optional(),
  mcp: policyShape.mcp.optional(),
  reply_fallback: policyShape.reply_fallback.optional(),
  history: policyShape.history.optional(),
  mid_turn: policyShape.mid_turn.optional(),
  participation: policyShape.participation.optional(),
  work_status: policyShape.work_status.optional(),
  tool_titles: policyShape.tool_titles.optional(),
  reply_placement: policyShape.reply_placement.optional(),
  agent: channelAgent.optional().describe("agent.sandbox / agent.network for this channel, stricter than agent's only"),
});
type ChannelEntry = z.output<typeof channel>;

const queue = z.strictObject({
  max_attempts: z.number().int().min(1).max(20).default(3).describe("attempts per turn before a failure notice; default 3"),
  retry_base: duration("retry_base", "5s"),
  retry_max: duration("retry_max", "5m"),
  hold_max: duration("hold_max", "12h").describe(
    "the longest a mention waits for a model provider's usage limit to reset, its holds together from the first (then it is tried once more, and fails with a notice if the limit still holds); default 12h",
  ),
  scope_cap: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(500)
    .describe("waiting events per scope; above it the oldest are refused with a notice"),
});

const http = z.strictObject({
  listen: z
    .string()
    .regex(/^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$/, { message: "expected host:port" })
    .describe("/healthz /readyz /metrics /status"),
  allow_hosts: z
    .array(z.string().regex(/^[A-Za-z0-9.-]+$/, { message: "expected a host name without port, e.g. ops.example.com" }))
    .default([])
    .describe(
      "Host names the endpoint answers to besides its listen address (a reverse proxy's, the machine's DNS name); other Host headers get 421 (DNS-rebinding defence)",
    ),
});

/**
 * Where the durable state lives. `sqlite` (the default) is one file under `state_dir`
 * for one daemon; `postgres` is a database several daemons of the same identity share
 * (fleet mode). The URL carries a password: give it from the environment.
 */
const state = z
  .strictObject({
    backend: z
      .enum(["sqlite", "postgres"])
      .default("sqlite")
      .describe("sqlite: one daemon, a file under state_dir; postgres: a fleet of daemons sharing one database"),
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, { message: "expected a postgres:// or postgresql:// URL" })
      .optional()
      .describe("PostgreSQL connection URL for backend: postgres, e.g. ${BUZZ_BRIDGE_DATABASE_URL}; redacted in logs and check output"),
  })
  .refine((s) => s.backend !== "postgres" || s.url !== undefined, {
    message: "backend: postgres needs url (e.g. url: ${BUZZ_BRIDGE_DATABASE_URL})",
    path: ["url"],
  })
  .refine((s) => s.backend !== "sqlite" || s.url === undefined, { message: "url only applies with backend: postgres", path: ["url"] });

/** `host` (any port) or `host:port`; an address written here may be private (the operator's own media server). */
const allowHost = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/, { message: "expected a host or host:port, without scheme or path" })
  .transform((h) => h.toLowerCase());

const attachments = z.strictObject({
  max_bytes: size("max_bytes", "10MiB", 1024 ** 3).describe(
    "attached images larger than this are not downloaded (text files: at most 256KiB), and the largest file the agent may attach to a reply; default 10MiB, at most 1GiB",
  ),
  max_per_turn: z.number().int().min(0).max(64).default(8).describe("files downloaded and given to the agent per turn at most; default 8"),
  allow_hosts: z
    .array(allowHost)
    .default([])
    .describe(
      "hosts besides the relay's own media endpoint that attachments are downloaded from; a host named here must resolve to public addresses, an address written here is used as it is",
    ),
  timeout: duration("timeout", "30s"),
});

const questions = z.strictObject({
  timeout: duration("timeout", "30m"),
  answered_by: z
    .enum(["owner", "requester"])
    .default("owner")
    .describe("who may answer the agent's question cards: the owner (default) or the person who asked"),
});

DURATION_KEYS.add("after");
const progress = z.strictObject({
  after: z
    .string()
    .default("60s")
    .transform((s, ctx) => {
      if (s.trim() === "off") return false as const;
      const ms = parseDuration(s);
      if (ms === null) {
        ctx.addIssue({ code: "custom", message: "bad duration: write it as 90s, 15m or 2h, or off" });
        return z.NEVER;
      }
      return ms;
    })
    .describe('post a "still working" note when a turn runs longer than this (e.g. 60s); off disables it; default 60s'),
});

/**
 * What an agent may post through the bridge: one message's content (send_message, and the
 * final-text fallback, which is cut to it) and send_message calls per turn. Both protect the
 * daemon and the channel from an agent told to flood (docs/security.md).
 */
export const DEFAULT_REPLY_MAX_BYTES = "256KiB";
const replies = z.strictObject({
  max_bytes: size("max_bytes", DEFAULT_REPLY_MAX_BYTES, 16 * 1024 * 1024).describe(
    "the most one send_message may post (its content as UTF-8; a longer one is refused with an error naming this limit) and what a final-text fallback reply is cut to; default 256KiB, at most 16MiB",
  ),
  max_per_turn: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(20)
    .describe(
      "send_message calls one turn may make (at least one per message the turn answers); the excess is refused with an error the agent sees; default 20",
    ),
});

const log = z.strictObject({
  level: z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).default("info"),
  format: z.enum(["json", "pretty"]).default("json"),
});

// ---- heartbeat and policy lock (top-level keys; kept together) ----

/** The Rust bridge's built-in heartbeat text, in substance: look for work, stay quiet when there is none. */
export const DEFAULT_HEARTBEAT_PROMPT =
  "Heartbeat: nobody asked you anything. Check the channel for pending actions and unanswered mentions and act on them; if there is nothing to do, do not post anything.";

DURATION_KEYS.add("every");
const heartbeat = z.strictObject({
  every: z
    .string()
    .regex(new RegExp(DURATION_PATTERN), { message: "bad duration: write it as 90s, 15m or 2h" })
    .transform((s) => parseDuration(s)!)
    .refine((ms) => ms >= 1000 && ms <= 86_400_000, { message: "heartbeat.every must be between 1s and 24h" })
    .describe("how often an idle agent is prompted (1s … 24h)"),
  prompt: z.string().min(1).optional().describe("the heartbeat's text; default: check for pending work, stay silent when there is none"),
  prompt_file: z.string().optional().describe("file holding the heartbeat text (instead of prompt)"),
  channel: channelIdSchema(false).describe("the channel (UUID) whose context the heartbeat session has and where what it posts lands"),
});

const workflows = z.strictObject({
  wake: z
    .boolean()
    .default(false)
    .describe(
      "true: a workflow's message (a kind 9 signed by the relay's NIP-11 self key, buzz:workflow-owner = this agent's owner, buzz:workflow-mention = this agent) wakes the agent as if the owner had mentioned it; default false",
    ),
});

const team = z.strictObject({
  max_concurrent: z
    .number()
    .int()
    .min(1)
    .max(256)
    .optional()
    .describe(
      "with agents: the turns all agents run at once, together; each agent's own agent.max_concurrent still holds; default no cap beyond those",
    ),
  allow_unsandboxed: z
    .boolean()
    .default(false)
    .describe(
      "with agents: let an entry run with agent.sandbox: off, whose agent can then read every other agent's key file, the config and the team's state (a warning at every start names them); without it such an entry is a config error",
    ),
});

const policy = z.strictObject({
  allowed_respond_to: z
    .array(RespondTo)
    .min(1, { message: "list at least one respond_to mode, or leave allowed_respond_to out" })
    .optional()
    .describe("the respond_to modes this deployment permits; start-up and check fail when a channel uses another"),
  bot_exchanges: z
    .number()
    .int()
    .min(0)
    .max(100)
    .default(3)
    .describe(
      "replies to other agents in one thread with no person's message between them (default 3); then the agent keeps silent there until a person writes",
    ),
});

export const configSchema = z.strictObject({
  $schema: z.string().optional(),
  identity,
  relay,
  agent: agent.prefault({}),
  mcp: mcpSchema.prefault({}),
  gates: gates.prefault({}),
  defaults: defaults.prefault({}),
  channels: z.array(channel).default([{ id: "*" }]),
  queue: queue.prefault({}),
  replies: replies.prefault({}),
  state_dir: z
    .string()
    .optional()
    .describe(
      "SQLite state (queue, cursors, sessions) and the link socket; relative to the config file's directory; default $STATE_DIRECTORY (systemd's StateDirectory=, the image's volume), else buzz-bridge-state beside the config file",
    ),
  state: state.prefault({}),
  http: http.optional(),
  log: log.prefault({}),
  shutdown_grace: duration("shutdown_grace", "30s"),
  heartbeat: heartbeat.optional(),
  policy: policy.prefault({}),
  team: team.optional(),
  attachments: attachments.prefault({}),
  questions: questions.prefault({}),
  progress: progress.prefault({}),
  workflows: workflows.prefault({}),
});

export interface CrossIssue {
  path: (string | number)[];
  message: string;
}

/**
 * Checks that span keys (exactly one secret source, unique channel ids, channel mcp lists
 * naming configured servers). They run on the raw document, beside the schema rather than
 * inside it, because zod skips refinements once any field fails: a user fixing a typo
 * should see these errors in the same run.
 */
export function crossCheck(raw: unknown): CrossIssue[] {
  const issues: CrossIssue[] = [];
  const obj = (v: unknown): Record<string, unknown> =>
    v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  const cfg = obj(raw);
  const id = obj(cfg.identity);
  if ("identity" in cfg && "secret_key" in id === "secret_key_file" in id) {
    issues.push({ path: ["identity"], message: "give exactly one of secret_key or secret_key_file" });
  }
  const channels = Array.isArray(cfg.channels) ? cfg.channels.map(obj) : [];
  const seen = new Map<unknown, number>();
  channels.forEach((ch, i) => {
    if (typeof ch.id !== "string") return;
    const first = seen.get(ch.id);
    if (first !== undefined)
      issues.push({ path: ["channels", i, "id"], message: `duplicate channel id ${ch.id} (also channels[${first}])` });
    else seen.set(ch.id, i);
  });
  const known = new Set(Object.keys(obj(obj(cfg.mcp).servers)));
  const checkList = (list: unknown, path: (string | number)[]) => {
    if (!Array.isArray(list)) return;
    list.forEach((name, j) => {
      if (typeof name === "string" && !known.has(name)) {
        const have = known.size ? [...known].join(", ") : "none configured";
        issues.push({ path: [...path, j], message: `unknown mcp server '${name}' (mcp.servers has: ${have})` });
      }
    });
  };
  checkList(obj(cfg.defaults).mcp, ["defaults", "mcp"]);
  channels.forEach((ch, i) => checkList(ch.mcp, ["channels", i, "mcp"]));
  const agentCfg = obj(cfg.agent);
  const globalSandbox = typeof agentCfg.sandbox === "string" ? agentCfg.sandbox : "auto";
  const globalNetwork = typeof agentCfg.network === "string" ? agentCfg.network : "on";
  channels.forEach((ch, i) => {
    const over = obj(ch.agent);
    if (
      typeof over.sandbox === "string" &&
      SANDBOX_ORDER.indexOf(over.sandbox) >= 0 &&
      SANDBOX_ORDER.indexOf(over.sandbox) < SANDBOX_ORDER.indexOf(globalSandbox)
    ) {
      issues.push({
        path: ["channels", i, "agent", "sandbox"],
        message: `a channel may only make the sandbox stricter than agent.sandbox (${globalSandbox}): use ${SANDBOX_ORDER.slice(SANDBOX_ORDER.indexOf(globalSandbox)).join(" or ")}, or change agent.sandbox`,
      });
    }
    if (
      typeof over.network === "string" &&
      NETWORK_ORDER.indexOf(over.network) >= 0 &&
      NETWORK_ORDER.indexOf(over.network) < NETWORK_ORDER.indexOf(globalNetwork)
    ) {
      issues.push({
        path: ["channels", i, "agent", "network"],
        message: `a channel may only make the network stricter than agent.network (${globalNetwork}): remove it, or change agent.network`,
      });
    }
  });
  // The HTTP slot is served on loopback: a sandbox without network cannot reach it.
  if (obj(cfg.mcp).transport === "http") {
    const offline = [
      ...(globalNetwork === "off" ? [{ path: ["agent", "network"], where: "agent.network" }] : []),
      ...channels.flatMap((ch, i) =>
        obj(ch.agent).network === "off" ? [{ path: ["channels", i, "agent", "network"], where: `channels[${i}].agent.network` }] : [],
      ),
    ];
    for (const o of offline)
      issues.push({
        path: ["mcp", "transport"],
        message: `mcp.transport: http needs the agent to reach the daemon on loopback, but ${o.where} is off; use mcp.transport: auto (sessions without network keep the stdio proxy) or stdio`,
      });
  }
  issues.push(...providerIssues(agentCfg));
  if ("auth_tag" in id && "auth_tag_file" in id)
    issues.push({ path: ["identity", "auth_tag_file"], message: "give at most one of auth_tag or auth_tag_file" });
  const hb = obj(cfg.heartbeat);
  if ("prompt" in hb && "prompt_file" in hb)
    issues.push({ path: ["heartbeat", "prompt_file"], message: "give at most one of heartbeat.prompt or heartbeat.prompt_file" });
  const relay = obj(cfg.relay);
  if (relay.seed !== undefined && relay.url !== "embedded") {
    issues.push({ path: ["relay", "seed"], message: "relay.seed only applies with url: embedded" });
  }
  return issues;
}

/** agent.provider is mapped onto a preset's own settings: it needs a preset that has one, and a model where the preset needs one. */
function providerIssues(agentCfg: Record<string, unknown>): CrossIssue[] {
  const prov = agentCfg.provider;
  if (!prov || typeof prov !== "object") return [];
  const name = agentCfg.preset;
  if (typeof name !== "string" || !(PRESET_NAMES as readonly string[]).includes(name))
    return [
      {
        path: ["agent", "provider"],
        message: `agent.provider needs agent.preset (it becomes the preset's own endpoint setting; presets: ${PRESET_NAMES.join(", ")}), or set the agent's endpoint variable in agent.env`,
      },
    ];
  const preset = PRESETS[name as PresetName];
  if (!preset.wire) {
    const able = PRESET_NAMES.filter((n) => PRESETS[n].wire).join(", ");
    return [
      {
        path: ["agent", "provider"],
        message: `the ${name} preset talks only to its vendor's service and has no endpoint setting; presets that take agent.provider: ${able}`,
      },
    ];
  }
  const issues: CrossIssue[] = [];
  const model = (prov as Record<string, unknown>).model;
  if (preset.providerNeedsModel && model === undefined)
    issues.push({
      path: ["agent", "provider", "model"],
      message: `the ${name} preset needs agent.provider.model: the model's name at that endpoint`,
    });
  if (model !== undefined && agentCfg.model !== undefined)
    issues.push({
      path: ["agent", "model"],
      message: "give the model once: agent.provider.model with a provider, agent.model without one",
    });
  return issues;
}

type ParsedConfig = z.output<typeof configSchema>;
/** The config as the rest of the code sees it: paths resolved (./paths.ts), so never missing. */
export type Config = Omit<ParsedConfig, "state_dir" | "agent"> & { state_dir: string; agent: ParsedConfig["agent"] & { cwd: string } };
export type Policy = {
  [K in keyof typeof policyShape]: z.output<(typeof policyShape)[K]>;
};

/** The effective policy of one channel: `defaults` overlaid with the channel's entry. */
export function policyFor(cfg: Config, channelId: string): Policy & { explicit: Set<keyof Policy> } {
  const entry = cfg.channels.find((c) => c.id === channelId) ?? cfg.channels.find((c) => c.id === "*");
  const d = cfg.defaults;
  const explicit = new Set<keyof Policy>();
  const pick = <K extends keyof Policy>(key: K, fallback: Policy[K]): Policy[K] => {
    const v = entry?.[key as keyof ChannelEntry] as Policy[K] | undefined;
    if (v !== undefined) {
      explicit.add(key);
      return v;
    }
    return fallback;
  };
  return {
    respond_to: pick("respond_to", d.respond_to),
    allow: pick("allow", d.allow),
    on_denied: pick("on_denied", d.on_denied),
    team_instructions: pick("team_instructions", d.team_instructions),
    require_mention: pick("require_mention", d.require_mention),
    kinds: pick("kinds", d.kinds),
    mcp: pick("mcp", d.mcp ?? Object.keys(cfg.mcp.servers)),
    reply_fallback: pick("reply_fallback", d.reply_fallback),
    history: pick("history", d.history),
    mid_turn: pick("mid_turn", d.mid_turn),
    participation: pick("participation", d.participation),
    work_status: pick("work_status", d.work_status),
    tool_titles: pick("tool_titles", d.tool_titles),
    reply_placement: pick("reply_placement", d.reply_placement),
    explicit,
  };
}

/** A channel's `agent` overrides (sandbox, network), from its entry or "*". */
export function isolationFor(
  cfg: Config,
  channelId: string,
): { sandbox?: z.output<typeof SandboxModeSchema>; network?: z.output<typeof NetworkModeSchema> } {
  const entry = cfg.channels.find((c) => c.id === channelId) ?? cfg.channels.find((c) => c.id === "*");
  return entry?.agent ?? {};
}

/** True when the config listens in this channel (an explicit entry, or "*"). */
export function channelSelected(cfg: Config, channelId: string): boolean {
  return cfg.channels.some((c) => c.id === channelId || c.id === "*");
}

/** JSON Schema for editors (`# yaml-language-server: $schema=…` in example.yaml). */
export function jsonSchema(): unknown {
  const opts = { io: "input", unrepresentable: "any" } as const;
  const schema = z.toJSONSchema(configSchema, opts) as Record<string, unknown> & {
    properties: Record<string, unknown>;
    required?: string[];
  };
  // Or a team: `agents:` entries over the shared top-level keys (config/agents.ts), so then
  // neither `identity` nor `relay` is required at the top.
  const entry = configSchema
    .omit({ $schema: true, state_dir: true, state: true, http: true, log: true, shutdown_grace: true, policy: true, team: true })
    .partial();
  const { $schema: _, ...agents } = z.toJSONSchema(
    z.array(entry).min(1).describe("several agents in one daemon: each entry laid over the top-level keys (docs/configuration.md)"),
    opts,
  ) as Record<string, unknown>;
  const { required = [], ...rest } = schema;
  return {
    $id: "https://buzz-bridge.dev/buzz-bridge.schema.json",
    title: "buzz-bridge configuration",
    ...rest,
    properties: { ...schema.properties, agents },
    anyOf: [{ required }, { required: ["agents"] }],
  };
}
