/** Failure domains of the development relay, each with a message a user can act on. */

/** The seed file could not be read or does not have the documented shape (docs/dev-relay.md). */
export class SeedError extends Error {
  override name = "SeedError";
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: invalid dev-relay seed:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

/** A runtime admin request (add member, create channel) that cannot be carried out. */
export class DevRelayAdminError extends Error {
  override name = "DevRelayAdminError";
}
