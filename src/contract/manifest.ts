/**
 * The proxy's manifest as it crosses the link: which downstream servers one agent session
 * gets, and the hook and listing deadlines, in milliseconds. Server order is config order:
 * hook answers are merged in it. Part of the daemon↔proxy contract; the proxy's YAML file
 * form (`--manifest`) is read in proxy/manifest.ts.
 */
import { z } from "zod";
import { DEFAULT_MCP_TIMEOUT, SERVER_NAME_PATTERN, type McpServerConfig } from "../config/schema.js";
import { parseDuration } from "../config/duration.js";

/** A tool call's timeout when the server sets none (config `mcp.servers.<name>.timeout`). */
export const DEFAULT_CALL_TIMEOUT_MS = parseDuration(DEFAULT_MCP_TIMEOUT)!;
/** `mcp.pre_tool_deadline` when a manifest leaves it out. */
export const DEFAULT_PRE_TOOL_DEADLINE_MS = 2000;

export interface ManifestServer {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /** false keeps tool names unchanged (the dev shell stays `shell`). */
  prefix: boolean;
  /**
   * `wait`: a gate a person counts on (a human approval). When `_Stop` is due and it is not
   * running, the fan-out reports it as down with its `on_error` verdict instead of leaving it out.
   */
  stop: "reprompt" | "wait";
  /** A hook that errors or times out, or a `stop: wait` server that is not running, counts as this verdict. */
  on_error: "allow" | "object";
  /** Per-call timeout in ms (progress restarts it); absent = DEFAULT_CALL_TIMEOUT_MS. */
  timeout?: number;
  /** Asked `_PreToolUse` (and `_PostToolUse`) around every tool call; absent = not asked (proxy/tool-gates.ts). */
  pre_tool?: "block" | "advise";
}

export interface ProxyManifest {
  servers: ManifestServer[];
  hook_deadline: number;
  list_timeout: number;
  /** One deadline, in ms, for all `_PreToolUse` answers to one tool call; absent = DEFAULT_PRE_TOOL_DEADLINE_MS. */
  pre_tool_deadline?: number;
  /** The largest file send_message may attach (`attachments.max_bytes`); the proxy checks it before reading. */
  attachment_max_bytes?: number;
  /**
   * `replies.max_bytes`: the proxy refuses a longer send_message itself, so its content never
   * crosses the link (the daemon checks again). Absent: the daemon alone decides.
   */
  message_max_bytes?: number;
}

/** The JSON form sent over the link (already in ms, already filtered to the channel). */
export const manifestWire = z.object({
  servers: z.array(
    z.object({
      name: z.string().regex(SERVER_NAME_PATTERN),
      command: z.string().min(1),
      args: z.array(z.string()),
      env: z.record(z.string(), z.string()),
      cwd: z.string().optional(),
      prefix: z.boolean(),
      stop: z.enum(["reprompt", "wait"]).default("reprompt"),
      on_error: z.enum(["allow", "object"]),
      timeout: z.number().int().positive().optional(),
      pre_tool: z.enum(["block", "advise"]).optional(),
    }),
  ),
  hook_deadline: z.number().int().positive(),
  list_timeout: z.number().int().positive(),
  pre_tool_deadline: z.number().int().positive().optional(),
  attachment_max_bytes: z.number().int().min(0).optional(),
  message_max_bytes: z.number().int().positive().optional(),
});

/** Builds a manifest from the config's (already parsed) `mcp` section, keeping only `names`. */
export function manifestFromConfig(
  mcp: { servers: Record<string, McpServerConfig>; hook_deadline: number; list_timeout: number; pre_tool_deadline?: number },
  names: string[] = Object.keys(mcp.servers),
): ProxyManifest {
  const wanted = new Set(names);
  return {
    servers: Object.entries(mcp.servers)
      .filter(([name]) => wanted.has(name))
      .map(([name, s]) => ({
        name,
        command: s.command,
        args: s.args,
        env: s.env,
        cwd: s.cwd,
        prefix: s.prefix,
        stop: s.stop,
        on_error: s.on_error,
        timeout: s.timeout,
        ...(s.pre_tool ? { pre_tool: s.pre_tool } : {}),
      })),
    hook_deadline: mcp.hook_deadline,
    list_timeout: mcp.list_timeout,
    ...(mcp.pre_tool_deadline ? { pre_tool_deadline: mcp.pre_tool_deadline } : {}),
  };
}
