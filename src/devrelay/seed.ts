/**
 * The `--seed FILE` format (docs/dev-relay.md): relay members and channels with their members,
 * optionally initial messages. YAML via the `yaml` library, validated with zod; pubkeys
 * may be npub or hex and are normalised by config/keys.ts.
 */
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { z } from "zod";
import { parsePubkey } from "../config/keys.js";
import { SeedError } from "./errors.js";
import { seedLimitsSchema } from "./limits.js";
import { CHANNEL_TYPES } from "../buzz/directory.js";

const pubkey = z.string().transform((s, ctx) => {
  try {
    return parsePubkey(s);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
    return z.NEVER;
  }
});

export const ChannelType = z.enum(CHANNEL_TYPES);
export type ChannelType = z.infer<typeof ChannelType>;

const seedMessage = z.strictObject({
  /** Signs the message; without it the relay's own key signs (it is a member of nothing, so this is only for show). */
  author_nsec: z.string().optional(),
  content: z.string(),
});

const seedChannel = z.strictObject({
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  about: z.string().optional(),
  type: ChannelType.default("stream"),
  members: z.array(pubkey).default([]),
  messages: z.array(seedMessage).default([]),
});

const seedSchema = z.strictObject({
  members: z.array(pubkey).default([]),
  /** Buzz's limits, changed for this relay (limits.ts; docs/dev-relay.md). */
  limits: seedLimitsSchema.optional(),
  channels: z.array(seedChannel).default([]),
});

/** A validated seed (defaults applied). */
export type SeedFile = z.infer<typeof seedSchema>;
/** What a caller may pass in-process: optional fields may be left out. */
export type SeedInput = z.input<typeof seedSchema>;

/** Reads and validates a seed file; throws SeedError naming the file and each problem. */
export function loadSeed(path: string): SeedFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new SeedError(path, [`cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`]);
  }
  let raw: unknown;
  try {
    raw = parse(text) ?? {};
  } catch (err) {
    throw new SeedError(path, [`not valid YAML: ${(err as Error).message}`]);
  }
  return parseSeed(raw, path);
}

/** Validates an already parsed seed object (used for in-process seeds too). */
export function parseSeed(raw: unknown, origin = "<seed>"): SeedFile {
  const result = seedSchema.safeParse(raw);
  if (!result.success) {
    // The messages never echo input values, so an nsec in the wrong place is not printed.
    throw new SeedError(
      origin,
      result.error.issues.map((i) => `${i.path.join(".") || "(top level)"}: ${i.message}`),
    );
  }
  return result.data;
}
