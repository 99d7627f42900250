/**
 * Shared argv parsing for subcommands, on node:util's parseArgs, so every command
 * answers --help the same way and reports unknown flags as usage errors (exit 1).
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

export class UsageError extends Error {
  override name = "UsageError";
}

export type Options = NonNullable<ParseArgsConfig["options"]>;

export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
}

/**
 * Parses argv for one subcommand. Returns null when --help was given (the help text
 * has been printed); throws UsageError naming the bad flag otherwise.
 */
export function parseCommandArgs(argv: string[], options: Options, help: string, allowPositionals = false): ParsedArgs | null {
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs({ args: argv, options: { ...options, help: { type: "boolean", short: "h" } }, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${help}`);
  }
  if (parsed.values.help) {
    process.stdout.write(help.endsWith("\n") ? help : `${help}\n`);
    return null;
  }
  return parsed;
}

/** Runs a command body, mapping UsageError to exit 1 with the message on stderr. */
export async function withUsage(body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
}
