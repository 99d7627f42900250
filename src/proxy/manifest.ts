/**
 * The proxy's manifest read by hand: a YAML file shaped like the config's `mcp` section
 * (durations as `2s`). Under the daemon it arrives over the link as JSON with milliseconds;
 * that shape is part of the daemon↔proxy contract (contract/manifest.ts).
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml, YAMLParseError } from "yaml";
import { z } from "zod";
import { parseDuration, DURATION_PATTERN } from "../config/duration.js";
import { DEFAULT_MCP_TIMEOUT, defaultOnError, type McpServerConfig } from "../config/schema.js";
import { manifestFromConfig, SERVER_NAME_PATTERN, type ProxyManifest } from "../contract/manifest.js";

export { manifestFromConfig, type ManifestServer, type ProxyManifest } from "../contract/manifest.js";

/** buzz-agent's hook timeout is 2.5 s; our merged answer must land well before it. */
export const DEFAULT_HOOK_DEADLINE_MS = 2000;
/** buzz-agent gives `tools/list` 30 s; we answer with what we have after this. */
export const DEFAULT_LIST_TIMEOUT_MS = 15_000;

export class ManifestError extends Error {
  override name = "ManifestError";
}

const duration = z
  .string()
  .regex(new RegExp(DURATION_PATTERN), { message: "bad duration: write it as 90s, 15m or 2h" })
  .transform((s) => parseDuration(s)!);

const serverFile = z
  .strictObject({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().optional(),
    prefix: z.boolean().default(true),
    stop: z.enum(["reprompt", "wait"]).default("reprompt"),
    on_error: z.enum(["allow", "object"]).optional(),
    pre_tool: z.enum(["block", "advise"]).optional(),
    timeout: duration.prefault(DEFAULT_MCP_TIMEOUT),
  })
  .transform((s) => ({ ...s, on_error: s.on_error ?? defaultOnError(s.stop) }));

const manifestFile = z.strictObject({
  servers: z.record(z.string().regex(SERVER_NAME_PATTERN, { message: "server names use letters, digits and -" }), serverFile).default({}),
  hook_deadline: duration.prefault("2s"),
  list_timeout: duration.prefault("15s"),
  pre_tool_deadline: duration.prefault("2s"),
  // Accepted so the config's mcp section can be copied as is; a proxy on stdio is the stdio transport.
  transport: z.enum(["auto", "stdio", "http"]).optional(),
});

/** Reads and validates a `--manifest` YAML file; errors name the file and the key. */
export function loadManifestFile(file: string): ProxyManifest {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ManifestError(`${file}: cannot read manifest: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    const pos = err instanceof YAMLParseError && err.linePos ? `:${err.linePos[0].line}:${err.linePos[0].col}` : "";
    throw new ManifestError(`${file}${pos}: ${(err as Error).message.split("\n")[0]}`);
  }
  const parsed = manifestFile.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${file}: ${i.path.join(".") || "(top)"}: ${i.message}`);
    throw new ManifestError(lines.join("\n"));
  }
  const { transport: _stdio, ...mcp } = parsed.data;
  return manifestFromConfig({ ...mcp, servers: mcp.servers as Record<string, McpServerConfig> });
}
