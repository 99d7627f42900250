/**
 * Where this installation's `buzz-bridge` CLI lives, for starting its own subcommands
 * (`mcp-proxy`, `demo-agent`) as child processes. Run from source under tsx, the calling
 * module sits in src/ and the runnable CLI is the built one in dist/.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export function cliPath(): string {
  const cli = fileURLToPath(new URL("../cli.js", import.meta.url));
  return existsSync(cli) ? cli : cli.replace(/([/\\])src([/\\])cli\.js$/, "$1dist$2cli.js");
}
