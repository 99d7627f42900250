/**
 * `doctor`'s checks of an agent preset (docs/agents.md): the command installed (where, which
 * version), the user's key set, and the bridge's tools as the agent offers them to its model.
 * For that last one the agent is started with its preset pointed at the probe model on
 * 127.0.0.1, opens a session with the bridge's real MCP proxy (its buzz tools served through a
 * link of doctor's own, which posts nothing), and answers one prompt; the tools in the probe
 * model's request are the tools as the agent sees them.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { AgentPool, agentEnvironment, poolOptionsFromConfig, presetInstall } from "../../agent/index.js";
import { cliPath } from "../../base/cli-path.js";
import { silentLogger } from "../../base/log.js";
import { resolveAgentCommand } from "../../config/agent-command.js";
import type { LoadedConfig } from "../../config/load.js";
import { BUZZ_TOOL_NAMES } from "../../contract/buzz-tool-schemas.js";
import { PROXY_SERVER_NAME } from "../../contract/proxy-entry.js";
import { LinkServer } from "../../link/server.js";
import { presetFor, type Preset } from "../../presets/index.js";
import type { CheckResult } from "./doctor-result.js";
import { startProbeModel } from "./probe-model.js";
import { providerCheck } from "./doctor-provider.js";
import { inAgentsNetwork } from "./doctor-sandbox.js";

/**
 * A HOME of doctor's own for the agents it starts, removed after: an agent writes its
 * settings, sessions and caches under HOME (Claude's ~/.claude*, Codex's ~/.codex/sessions),
 * and doctor never writes into the operator's. The XDG directories follow it.
 */
export function throwawayHome(): { env: Record<string, string>; dispose(): void } {
  const home = mkdtempSync(join(tmpdir(), "buzz-bridge-doctor-home-"));
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    XDG_CACHE_HOME: join(home, ".cache"),
  };
  return { env, dispose: () => rmSync(home, { recursive: true, force: true }) };
}

/** The model name the probe hands an agent when the config names none. */
const PROBE_MODEL = "buzz-bridge-probe";

export async function presetChecks(loaded: LoadedConfig, timeoutMs: number): Promise<CheckResult[]> {
  const cfg = loaded.config.agent;
  const preset = presetFor(cfg.preset);
  if (!preset) return [];
  const { command } = resolveAgentCommand(cfg);
  const env = agentEnvironment({ configured: cfg.env, secret: loaded.secretKey, inherit: preset.keys }).env;
  const install = await presetInstall(preset, command, env.PATH ?? process.env.PATH ?? "");
  const installed: CheckResult = install.path
    ? {
        name: "agent install",
        mark: "ok",
        summary: `${preset.title}: ${install.path}${install.version ? ` (${install.version})` : ""}`,
      }
    : { name: "agent install", mark: "fail", summary: `${command} (the ${preset.name} preset) is not installed: ${preset.install}` };
  const [provider, tools] = await Promise.all([
    providerFromAgentsNetwork(loaded, preset, env, timeoutMs),
    install.path ? toolsCheck(loaded, preset, timeoutMs) : skip("agent install"),
  ]);
  return [installed, keyCheck(preset, env), provider, tools];
}

/**
 * The provider asked from where the agent asks it: inside its sandbox when it gets a network
 * of its own there (a base URL the host reaches may be out of the agent's reach, a loopback
 * port the config does not name, say), else from here. The same check either way: doctor's
 * own built module, run by the sandbox's node.
 */
async function providerFromAgentsNetwork(
  loaded: LoadedConfig,
  preset: Preset,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<CheckResult> {
  const cfg = loaded.config.agent;
  const agentCfg = { provider: cfg.provider, model: cfg.model };
  const dist = dirname(cliPath());
  const argv = [
    process.execPath,
    "-e",
    PROVIDER_SCRIPT,
    pathToFileURL(join(dist, "app", "doctor", "doctor-provider.js")).href,
    pathToFileURL(join(dist, "presets", "index.js")).href,
    JSON.stringify({ agent: agentCfg, preset: preset.name, timeoutMs }),
  ];
  let inside: Awaited<ReturnType<typeof inAgentsNetwork>>;
  try {
    inside = await inAgentsNetwork(loaded, argv, env, timeoutMs + 5000);
  } catch (err) {
    return { name: "provider", mark: "fail", summary: `could not be asked from the agent's sandbox: ${(err as Error).message}` };
  }
  if (!inside) return providerCheck(cfg, preset, env, timeoutMs);
  const r = JSON.parse(inside.stdout) as CheckResult;
  return { ...r, summary: `${r.summary} (asked from the agent's sandbox: ${inside.words})` };
}

/** Runs in the agent's sandbox: argv[1] the provider check's module, argv[2] the presets', argv[3] what to ask. */
const PROVIDER_SCRIPT = `
const [checkUrl, presetsUrl, what] = process.argv.slice(1);
const t = JSON.parse(what);
Promise.all([import(checkUrl), import(presetsUrl)])
  .then(([c, p]) => c.providerCheck(t.agent, p.presetFor(t.preset), process.env, t.timeoutMs))
  .then((r) => process.stdout.write(JSON.stringify(r)), (e) => { process.stderr.write(String(e && e.message || e)); process.exit(1); });
`;

function skip(because: string): CheckResult {
  return { name: "agent tools", mark: "skip", summary: `skipped: the ${because} check failed` };
}

function keyCheck(preset: Preset, env: Record<string, string>): CheckResult {
  const set = preset.keys.filter((k) => (env[k] ?? "").trim() !== "");
  if (set.length) return { name: "agent key", mark: "ok", summary: `${set.join(", ")} set for the agent` };
  const home = env.HOME ?? homedir();
  const login = preset.loginFiles?.map((f) => join(home, f)).find((f) => existsSync(f));
  if (login) return { name: "agent key", mark: "ok", summary: `no key variable, but a login: ${login}` };
  return {
    name: "agent key",
    mark: "fail",
    summary: `none of ${preset.keys.join(", ")} is set: the agent needs ${preset.needs}; set it in the daemon's environment or agent.env`,
  };
}

async function toolsCheck(loaded: LoadedConfig, preset: Preset, timeoutMs: number): Promise<CheckResult> {
  if (!preset.wire)
    return {
      name: "agent tools",
      mark: "skip",
      summary: `the ${preset.name} preset talks only to its vendor's service: its tools cannot be shown offline`,
    };
  const cfg = loaded.config.agent;
  const dir = mkdtempSync(join(tmpdir(), "buzz-bridge-doctor-"));
  const probe = await startProbeModel();
  const home = throwawayHome();
  const link = new LinkServer({ socketPath: join(dir, "link.sock"), logger: silentLogger() });
  let pool: AgentPool | undefined;
  const bound = Math.max(60_000, timeoutMs * 4);
  let timer: NodeJS.Timeout | undefined;
  try {
    await link.start();
    const refuse = () => Promise.reject(new Error("doctor's probe session posts nothing"));
    const session = link.register({
      sessionKey: "doctor",
      manifest: { servers: [], hook_deadline: 2000, list_timeout: 10_000 },
      tools: { sendMessage: refuse, addReaction: refuse, getMessages: refuse, getThread: refuse, getChannel: refuse },
    });
    // The user's keys stay out of the probe: any text will do for a model on 127.0.0.1.
    const placeholders = Object.fromEntries([...preset.keys, "OPENAI_API_KEY"].map((k) => [k, "doctor-probe"]));
    const po = poolOptionsFromConfig(
      {
        ...cfg,
        ...resolveAgentCommand(cfg),
        env: { ...cfg.env, ...placeholders, ...home.env },
        provider: { base_url: probe.url, model: cfg.provider?.model ?? cfg.model ?? PROBE_MODEL },
        model: undefined,
        effort: undefined,
        auth_method: cfg.auth_method,
      },
      { secret: loaded.secretKey, stateDir: dir, initTimeoutMs: timeoutMs },
    );
    pool = new AgentPool({ ...po, cwd: join(dir, "work", "{channel}"), warmSpare: false, maxConcurrent: 1, logger: silentLogger() });
    const run = async () => {
      const s = await pool!.acquire("doctor", { channel: { id: "doctor-probe", name: "doctor-probe" }, mcpEnv: session.env });
      await s.prompt([{ type: "text", text: "This is buzz-bridge doctor checking which tools you have. Reply with one word." }]);
    };
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${Math.round(bound / 1000)} s`)), bound);
    });
    await Promise.race([run(), timeout]);
  } catch (err) {
    if (probe.requests.length === 0)
      return {
        name: "agent tools",
        mark: "fail",
        summary: `could not run one prompt against the probe model: ${(err as Error).message.split("\n")[0]}`,
      };
  } finally {
    clearTimeout(timer);
    await pool?.close().catch(() => undefined);
    await link.stop().catch(() => undefined);
    await probe.close();
    rmSync(dir, { recursive: true, force: true });
    home.dispose();
  }
  return toolsResult(
    preset,
    probe.requests.map((r) => r.tools),
  );
}

/** The verdict on the tool lists the agent sent to the probe model. */
export function toolsResult(preset: Preset, lists: string[][]): CheckResult {
  if (lists.length === 0)
    return {
      name: "agent tools",
      mark: "fail",
      summary: `the agent never asked the probe model: it does not take its endpoint from the ${preset.name} preset's setting (agent.env overriding it?)`,
    };
  // The main turn's request offers the most tools; side requests (titles, routers) offer none.
  const tools = lists.reduce((a, b) => (b.length > a.length ? b : a));
  const bridge = tools.filter((t) => t.includes(PROXY_SERVER_NAME) && BUZZ_TOOL_NAMES.some((n) => t.endsWith(n)));
  if (bridge.some((t) => t.endsWith("send_message")))
    return { name: "agent tools", mark: "ok", summary: `the model is offered the bridge's tools: ${bridge.join(", ")}` };
  const search = tools.find((t) => /tool_?search/i.test(t));
  if (search)
    return {
      name: "agent tools",
      mark: "fail",
      summary: `the bridge's tools are hidden behind the agent's ${search}: ${preset.advice.search ?? "turn its tool search off"}`,
      details: [`offered: ${tools.join(", ")}`],
    };
  return {
    name: "agent tools",
    mark: "fail",
    summary: `the agent dropped the bridge's MCP server (none of its tools reach the model): ${preset.advice.dropped ?? "check the agent's stderr"}`,
    details: [`offered: ${tools.join(", ") || "no tools"}`],
  };
}
