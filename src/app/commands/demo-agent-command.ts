/** `buzz-bridge demo-agent`: the scripted ACP agent on stdio (see ./agent.ts for its directives). */
import { parseCommandArgs, withUsage } from "../../base/args.js";

const HELP = `usage: buzz-bridge demo-agent

The scripted demo agent: speaks ACP on stdin/stdout, calls the MCP tools it is given
(send_message) and uses no LLM. Select it with
  agent: { command: buzz-bridge, args: [demo-agent] }
Directives in a message (#final-only, #silent, #tool NAME JSON, #permission, #env,
#sysprompt, #compact, #slow MS, #crash, #hang, #ignore-cancel, #stop-hook) are for tests.
DEMO_AGENT_SYSTEM_PROMPT=1 makes it advertise sessionCapabilities.systemPrompt.`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    if (parseCommandArgs(argv, {}, HELP) === null) return 0;
    const { runDemoAgent } = await import("../../demo/agent.js");
    process.stdout.on("error", () => {
      // The client went away; the connection closes and we exit below.
    });
    await runDemoAgent();
    return 0;
  });
}
