/**
 * The migration table (docs/migrating.md) has a row for every variable the Rust bridge (buzz-acp)
 * documents — with our equivalent or the reason there is none — so a team moving over
 * finds each of its settings.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

/** buzz-acp's documented environment variables (its README and config.rs, including legacy names). */
const RUST_BRIDGE_VARIABLES = [
  "BUZZ_ACP_AGENTS",
  "BUZZ_ACP_AGENT_ARGS",
  "BUZZ_ACP_AGENT_COMMAND",
  "BUZZ_ACP_AGENT_OWNER",
  "BUZZ_ACP_ALLOWED_RESPOND_TO",
  "BUZZ_ACP_API_TOKEN",
  "BUZZ_ACP_AUDIT",
  "BUZZ_ACP_AUDIT_PATH",
  "BUZZ_ACP_BASE_PROMPT_FILE",
  "BUZZ_ACP_CHANNELS",
  "BUZZ_ACP_CONFIG",
  "BUZZ_ACP_CONTEXT_MESSAGE_LIMIT",
  "BUZZ_ACP_DEDUP",
  "BUZZ_ACP_EFFORT_LEVEL",
  "BUZZ_ACP_EVENT_BUFFER",
  "BUZZ_ACP_EXIT_AFTER_INACTIVITY",
  "BUZZ_ACP_HEARTBEAT_INTERVAL",
  "BUZZ_ACP_HEARTBEAT_PROMPT",
  "BUZZ_ACP_HEARTBEAT_PROMPT_FILE",
  "BUZZ_ACP_IDLE_POOL_SLEEP",
  "BUZZ_ACP_IDLE_TIMEOUT",
  "BUZZ_ACP_INITIAL_MESSAGE",
  "BUZZ_ACP_KINDS",
  "BUZZ_ACP_LAZY_POOL",
  "BUZZ_ACP_LIVE_SETTINGS_FILE",
  "BUZZ_ACP_MAX_TURNS_PER_SESSION",
  "BUZZ_ACP_MAX_TURN_DURATION",
  "BUZZ_ACP_MCP_COMMAND",
  "BUZZ_ACP_MCP_SERVERS",
  "BUZZ_ACP_MEMORY",
  "BUZZ_ACP_MODEL",
  "BUZZ_ACP_MULTIPLE_EVENT_HANDLING",
  "BUZZ_ACP_NO_BASE_PROMPT",
  "BUZZ_ACP_NO_IGNORE_SELF",
  "BUZZ_ACP_NO_MEMORY",
  "BUZZ_ACP_NO_MENTION_FILTER",
  "BUZZ_ACP_NO_PRESENCE",
  "BUZZ_ACP_NO_TYPING",
  "BUZZ_ACP_PERMISSION_MODE",
  "BUZZ_ACP_PRIVATE_KEY",
  "BUZZ_ACP_RELAY_OBSERVER",
  "BUZZ_ACP_RESPOND_TO",
  "BUZZ_ACP_RESPOND_TO_ALLOWLIST",
  "BUZZ_ACP_SESSION_POLICY",
  "BUZZ_ACP_SESSION_TITLE",
  "BUZZ_ACP_SUBSCRIBE",
  "BUZZ_ACP_SYSTEM_PROMPT",
  "BUZZ_ACP_SYSTEM_PROMPT_FILE",
  "BUZZ_ACP_TEAM_INSTRUCTIONS",
  "BUZZ_ACP_TURN_LIVENESS_SECS",
  "BUZZ_ACP_TURN_TIMEOUT",
  "BUZZ_ACP_WAKE_TICKET_DIR",
  "BUZZ_AGENT_HOOK_TIMEOUT_MS",
  "BUZZ_AGENT_REQUIRE_REPLY",
  "BUZZ_AGENT_STOP_MAX_REJECTIONS",
  "BUZZ_API_TOKEN",
  "BUZZ_AUTH_TAG",
  "BUZZ_PRIVATE_KEY",
  "BUZZ_RELAY_URL",
  "MCP_HOOK_SERVERS",
];

test("the migration table names every buzz-acp variable, each in a row that says what replaces it", () => {
  const section = readFileSync("docs/migrating.md", "utf8");
  const rows = section.split("\n").filter((l) => l.startsWith("| `"));
  const missing = RUST_BRIDGE_VARIABLES.filter((v) => !rows.some((r) => r.split("|")[1]!.includes(`\`${v}\``)));
  assert.deepEqual(missing, []);
  for (const r of rows) assert.ok((r.split("|")[2] ?? "").trim().length > 3, `row without an equivalent or a reason: ${r}`);
});
