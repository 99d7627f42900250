/**
 * `buzz-bridge agents [--json]`: the agent presets (docs/agents.md), which are installed here
 * (where, which version), what each needs from the user, what is verified, and how to install
 * the others.
 */
import { parseCommandArgs, withUsage } from "../../base/args.js";
import { presetInstall } from "../../agent/index.js";
import { PRESET_NAMES, PRESETS } from "../../presets/index.js";

const HELP = `usage: buzz-bridge agents [--json]

The agent presets (agent.preset: NAME): for each, whether its command is installed here
(on PATH, with its version), what it needs from you (which key), whether agent.provider
applies, what the test suite verifies, and how to install it when it is missing.
--json prints the same as one JSON array. Details: docs/agents.md.`;

const VERIFIED: Record<string, string> = {
  ci: "verified in CI, offline",
  local: "verified by hand, offline",
  docs: "from its documentation",
};

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { json: { type: "boolean" } }, HELP);
    if (!args) return 0;
    const rows = await Promise.all(
      PRESET_NAMES.map(async (name) => {
        const p = PRESETS[name];
        const install = await presetInstall(p);
        return {
          preset: name,
          title: p.title,
          command: [p.command, ...p.args].join(" "),
          installed: install.path !== undefined,
          path: install.path,
          version: install.version,
          needs: p.needs,
          provider: p.wire ?? null,
          verified: p.verified,
          install: p.install,
          caveats: p.caveats,
        };
      }),
    );
    if (args.values.json) {
      process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return 0;
    }
    const lines: string[] = [];
    for (const r of rows) {
      const mark = r.installed ? "✓" : "–";
      const where = r.installed ? `installed: ${r.path}${r.version ? ` (${r.version})` : ""}` : `not installed; install: ${r.install}`;
      lines.push(`${mark} ${r.preset.padEnd(9)} ${r.title} — ${r.command}`);
      lines.push(`    ${where}`);
      lines.push(`    needs: ${r.needs}`);
      lines.push(`    agent.provider: ${r.provider ? `yes (${r.provider} API)` : "no"}; ${VERIFIED[r.verified]}`);
      if (r.caveats) lines.push(`    note: ${r.caveats}`);
    }
    const installed = rows.filter((r) => r.installed).length;
    lines.push("", `${installed} of ${rows.length} presets installed. Use one with agent.preset: NAME (docs/agents.md).`);
    process.stdout.write(`${lines.join("\n")}\n`);
    return 0;
  });
}
