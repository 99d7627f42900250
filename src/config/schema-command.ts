/** `buzz-bridge schema`: prints the config JSON Schema (source of config/buzz-bridge.schema.json). */
import { jsonSchema } from "./schema.js";

export async function main(_argv: string[]): Promise<number> {
  process.stdout.write(`${JSON.stringify(jsonSchema(), null, 2)}\n`);
  return 0;
}
