/**
 * The proxy's manifest: which downstream servers one agent session gets, and the hook
 * and listing deadlines. By hand it is a YAML file shaped like the config's `mcp`
 * section (durations as `2s`); under the daemon it arrives over the link as JSON with
 * milliseconds. Server order is config order: hook answers are merged in it.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml, YAMLParseError } from "yaml";
import { z } from "zod";
import { parseDuration, DURATION_PATTERN } from "../config/duration.js";
import type { McpServerConfig } from "../config/schema.js";

/** buzz-agent's hook timeout is 2.5 s; our merged answer must land well before it. */
export const DEFAULT_HOOK_DEADLINE_MS = 2000;
/** buzz-agent gives `tools/list` 30 s; we answer with what we have after this. */
export const DEFAULT_LIST_TIMEOUT_MS = 15_000;

export interface ManifestServer {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /** false keeps tool names unchanged (the dev shell stays `shell`). */
  prefix: boolean;
  /** A hook that errors or times out counts as this verdict. */
  on_error: "allow" | "object";
  /** Per-call timeout in ms; absent = none (shell commands may run long). */
  timeout?: number;
}

export interface ProxyManifest {
  servers: ManifestServer[];
  hook_deadline: number;
  list_timeout: number;
}

export class ManifestError extends Error {
  override name = "ManifestError";
}

const duration = z
  .string()
  .regex(new RegExp(DURATION_PATTERN), { message: "bad duration: write it as 90s, 15m or 2h" })
  .transform((s) => parseDuration(s)!);

const serverFile = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().optional(),
  prefix: z.boolean().default(true),
  stop: z.enum(["reprompt", "wait"]).default("reprompt"),
  on_error: z.enum(["allow", "object"]).default("allow"),
  timeout: duration.optional(),
});

const manifestFile = z.strictObject({
  servers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, { message: "server names use letters, digits and -" }), serverFile).default({}),
  hook_deadline: duration.prefault("2s"),
  list_timeout: duration.prefault("15s"),
});

/** The JSON form sent over the link (already in ms, already filtered to the channel). */
export const manifestWire = z.object({
  servers: z.array(
    z.object({
      name: z.string().regex(/^[A-Za-z0-9-]+$/),
      command: z.string().min(1),
      args: z.array(z.string()),
      env: z.record(z.string(), z.string()),
      cwd: z.string().optional(),
      prefix: z.boolean(),
      on_error: z.enum(["allow", "object"]),
      timeout: z.number().int().positive().optional(),
    }),
  ),
  hook_deadline: z.number().int().positive(),
  list_timeout: z.number().int().positive(),
});

/** Builds a manifest from the config's (already parsed) `mcp` section, keeping only `names`. */
export function manifestFromConfig(
  mcp: { servers: Record<string, McpServerConfig>; hook_deadline: number; list_timeout: number },
  names: string[] = Object.keys(mcp.servers),
): ProxyManifest {
  const wanted = new Set(names);
  return {
    servers: Object.entries(mcp.servers)
      .filter(([name]) => wanted.has(name))
      .map(([name, s]) => ({ name, command: s.command, args: s.args, env: s.env, cwd: s.cwd, prefix: s.prefix, on_error: s.on_error, timeout: s.timeout })),
    hook_deadline: mcp.hook_deadline,
    list_timeout: mcp.list_timeout,
  };
}

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
  return manifestFromConfig({ ...parsed.data, servers: parsed.data.servers as Record<string, McpServerConfig> });
}
