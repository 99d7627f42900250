/** `buzz-bridge schema`: prints the config JSON Schema (source of config/buzz-bridge.schema.json). */
import { parseCommandArgs, withUsage } from "../../base/args.js";
import { jsonSchema } from "../../config/schema.js";

const HELP = `usage: buzz-bridge schema

Prints the configuration's JSON Schema (what config/buzz-bridge.schema.json holds), for
editors that validate and complete YAML.`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    if (!parseCommandArgs(argv, {}, HELP)) return 0;
    process.stdout.write(`${JSON.stringify(jsonSchema(), null, 2)}\n`);
    return 0;
  });
}
