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
  /** Forum channels: a post (the thread's root), a vote, a comment in a post's thread. */
  forumPost: 45001,
  forumVote: 45002,
  forumComment: 45003,
  /** A question card the agent asks (JSON form in the content) and a person's answer to it. */
  questionCard: 44300,
  questionAnswer: 44301,
  presence: 20001,
  typing: 20002,
  observer: 24200,
  auth: 22242,
  httpAuth: 27235,
  /** Blossom authorization for the media routes (BUD-01/02). */
  blossomAuth: 24242,
  memberAdded: 44100,
  memberRemoved: 44101,
  groupMetadata: 39000,
  groupAdmins: 39001,
  groupMembers: 39002,
  /** NIP-78 application data (addressable): the daemon's instance beacon (buzz/instance.ts). */
  appData: 30078,
  /** NIP-AW agent work status: addressable, `d` = `h` = the channel, readable by its members. */
  workStatus: 30181,
  /** Buzz Desktop's agent directory entry (replaceable, agent-signed JSON; docs/protocol.md "Buzz Desktop"); whoever publishes one is an agent. */
  agentDirectory: 10100,
  /** Buzz Desktop's managed agent record (addressable, owner-signed, `d` = the agent's hex key). */
  managedAgent: 30177,
  /** NIP-29 put-user: an agent seats itself with a role (`bot`) in an open channel. */
  groupPutUser: 9000,
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

/** The kinds of a forum channel's conversation (posts and comments), which the bridge reads and answers there. */
export const FORUM_KINDS: readonly number[] = [KIND.forumPost, KIND.forumComment];
