/**
 * The `--seed FILE` format (docs/dev-relay.md): relay members (optionally named, with a kind 0
 * profile) and channels with their members, optionally initial messages. YAML via the `yaml`
 * library, validated with zod; pubkeys may be npub or hex and are normalised by config/keys.ts.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse } from "yaml";
import { z } from "zod";
import { parsePubkey, parseSecretKey, pubkeyOf } from "../config/keys.js";
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

/**
 * A relay member written out: the key (its public key, or the secret one in `nsec` or a
 * `key_file` such as `buzz-bridge keygen` writes) and a `name`. With a secret key and a
 * name the relay publishes the member's kind 0 profile, signed with that key, so clients
 * show the name; a name needs the secret key, since only its owner can sign a profile.
 */
const memberEntry = z
  .strictObject({
    pubkey: z.string().optional().describe("npub1… or 64-hex"),
    nsec: z.string().optional().describe("the member's secret key (development keys only)"),
    key_file: z.string().optional().describe("a file holding the member's nsec; relative to the seed file"),
    name: z.string().min(1).optional().describe("published as the member's kind 0 profile name"),
  })
  .refine((m) => [m.pubkey, m.nsec, m.key_file].filter((k) => k !== undefined).length === 1, {
    message: "give exactly one of pubkey, nsec or key_file",
  })
  .refine((m) => m.name === undefined || m.pubkey === undefined, {
    message: "a name needs the member's secret key (nsec or key_file) to sign its profile; with only a pubkey, leave name out",
  });

type MemberEntry = z.infer<typeof memberEntry>;

/**
 * A string (checked by `text`) or a member entry, each with its own messages: a union
 * would only say "Invalid input" for an nsec where a pubkey belongs.
 */
function stringOrEntry<T>(text: z.ZodType<T, string>) {
  return z.unknown().transform((v, ctx): T | MemberEntry => {
    const r = typeof v === "string" ? text.safeParse(v) : memberEntry.safeParse(v);
    if (r.success) return r.data;
    for (const issue of r.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path as PropertyKey[] });
    return z.NEVER;
  });
}

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
  /** npub or hex, the `name` of a relay member listed above, or a member entry. */
  members: z.array(stringOrEntry(z.string())).default([]),
  messages: z.array(seedMessage).default([]),
});

const seedSchema = z.strictObject({
  members: z.array(stringOrEntry(pubkey)).default([]),
  /** Buzz's limits, changed for this relay (limits.ts; docs/dev-relay.md). */
  limits: seedLimitsSchema.optional(),
  channels: z.array(seedChannel).default([]),
});

type ParsedSeed = z.infer<typeof seedSchema>;

/** A validated seed: every member as a pubkey, and the profiles to publish. */
export type SeedFile = Omit<ParsedSeed, "members" | "channels"> & {
  members: string[];
  channels: Array<Omit<ParsedSeed["channels"][number], "members"> & { members: string[] }>;
  /** Members given a name with their secret key: the relay publishes their kind 0 profile. */
  profiles: Array<{ secretKey: Uint8Array; name: string }>;
};
/** What a caller may pass in-process: optional fields may be left out. */
export type SeedInput = z.input<typeof seedSchema>;

/**
 * The id of a seeded channel that gives none: derived from its name, so the same seed gives
 * the same UUID on every start, with `--data` or without (a config may name the channel by it).
 */
export function seedChannelId(name: string): string {
  const h = createHash("sha256").update(`buzz-bridge dev-relay channel\0${name}`).digest("hex");
  // UUID layout, version 8 (a name-derived id of our own) and the RFC 4122 variant.
  const variant = ((Number.parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

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
  return parseSeed(raw, path, dirname(resolve(path)));
}

/**
 * Validates an already parsed seed object (used for in-process seeds too); `baseDir` is
 * where relative `key_file` paths start (the seed file's directory).
 */
export function parseSeed(raw: unknown, origin = "<seed>", baseDir = process.cwd()): SeedFile {
  const result = seedSchema.safeParse(raw);
  if (!result.success) {
    // The messages never echo input values, so an nsec in the wrong place is not printed.
    throw new SeedError(
      origin,
      result.error.issues.map((i) => `${i.path.join(".") || "(top level)"}: ${i.message}`),
    );
  }
  const problems: string[] = [];
  const named = new Map<string, string>();
  const profiles: SeedFile["profiles"] = [];
  const keyOf = (m: MemberEntry, where: string): { pubkey: string; secretKey?: Uint8Array } | undefined => {
    try {
      if (m.pubkey !== undefined) return { pubkey: parsePubkey(m.pubkey) };
      const text = m.nsec ?? readFileSync(resolve(baseDir, m.key_file!), "utf8");
      const secretKey = parseSecretKey(text);
      return { pubkey: pubkeyOf(secretKey), secretKey };
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      problems.push(`${where}: ${m.key_file !== undefined ? `key_file ${resolve(baseDir, m.key_file)}: ` : ""}${why}`);
      return undefined;
    }
  };
  const members: string[] = [];
  result.data.members.forEach((m, i) => {
    if (typeof m === "string") return void members.push(m);
    const k = keyOf(m, `members.${i}`);
    if (!k) return;
    members.push(k.pubkey);
    if (m.name !== undefined) {
      named.set(m.name, k.pubkey);
      if (k.secretKey) profiles.push({ secretKey: k.secretKey, name: m.name });
    }
  });
  const channels = result.data.channels.map((c, ci) => ({
    ...c,
    members: c.members.flatMap((m, mi) => {
      const where = `channels.${ci}.members.${mi}`;
      if (typeof m !== "string") {
        const k = keyOf(m, where);
        return k ? [k.pubkey] : [];
      }
      const byName = named.get(m);
      if (byName) return [byName];
      try {
        return [parsePubkey(m)];
      } catch (err) {
        problems.push(`${where}: ${(err as Error).message}, nor the name of a member listed under members`);
        return [];
      }
    }),
  }));
  if (problems.length) throw new SeedError(origin, problems);
  return { ...result.data, members, channels, profiles };
}
