/**
 * Buzz event kinds the bridge reads or writes (docs/protocol.md §4), in one place so no
 * module spells a number by heart.
 */
export const KIND = {
  profile: 0,
  deletion: 5,
  /** NIP-29 delete-event (what `buzz messages delete` sends); a deletion like kind 5 for the bridge. */
  groupDeletion: 9005,
  reaction: 7,
  message: 9,
  messageV2: 40002,
  edit: 40003,
  reminder: 40007,
  diff: 40008,
  system: 40099,
  approvalRequested: 46010,
  presence: 20001,
  typing: 20002,
  observer: 24200,
  auth: 22242,
  httpAuth: 27235,
  memberAdded: 44100,
  memberRemoved: 44101,
  groupMetadata: 39000,
  groupAdmins: 39001,
  groupMembers: 39002,
  /** NIP-78 application data (addressable): the daemon's instance beacon (buzz/instance.ts). */
  appData: 30078,
  /** NIP-AW agent work status: addressable, `d` = `h` = the channel, readable by its members. */
  workStatus: 30181,
} as const;

/** Kinds only delivered to a REQ whose `#p` is exactly the authenticated key. */
export const P_GATED_KINDS: ReadonlySet<number> = new Set([KIND.memberAdded, KIND.memberRemoved, KIND.observer, 1059, 44200]);

export function isEphemeral(kind: number): boolean {
  return kind >= 20000 && kind < 30000;
}

export function isReplaceable(kind: number): boolean {
  return kind === 0 || kind === 3 || (kind >= 10000 && kind < 20000);
}

export function isAddressable(kind: number): boolean {
  return kind >= 30000 && kind < 40000;
}
