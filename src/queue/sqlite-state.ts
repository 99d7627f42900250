/**
 * The SQLite store behind the asynchronous `StateStore` interface: the same file and
 * behaviour as `QueueStore` (one daemon per `state_dir`), every call resolving at once.
 */
import type { Event } from "nostr-tools";
import { QueueStore, type EventState, type StoredEvent, type TurnRecord } from "./store.js";
import type { StateStore, TurnUpdate } from "./state-store.js";

export class SqliteStateStore implements StateStore {
  readonly backend = "sqlite" as const;
  readonly where: string;

  constructor(readonly queue: QueueStore) {
    this.where = queue.file;
  }

  /** Opens (creating if needed) `<stateDir>/queue.db`. */
  static open(stateDir: string): SqliteStateStore {
    return new SqliteStateStore(QueueStore.open(stateDir));
  }

  async accept(ev: Event, channel: string, scope: string): Promise<boolean> {
    return this.queue.accept(ev, channel, scope);
  }
  async has(eventId: string): Promise<boolean> {
    return this.queue.has(eventId);
  }
  async event(eventId: string): Promise<StoredEvent | undefined> {
    return this.queue.event(eventId);
  }
  async setEventStates(ids: readonly string[], state: EventState, turnId: number | null = null): Promise<void> {
    this.queue.setEventStates(ids, state, turnId);
  }
  async waitingEvents(): Promise<StoredEvent[]> {
    return this.queue.waitingEvents();
  }
  async eventsOfTurn(turnId: number): Promise<StoredEvent[]> {
    return this.queue.eventsOfTurn(turnId);
  }
  async noteSeen(channel: string, createdAt: number): Promise<void> {
    this.queue.noteSeen(channel, createdAt);
  }
  async cursor(channel: string): Promise<number | undefined> {
    return this.queue.cursor(channel);
  }
  async minCursor(): Promise<number | undefined> {
    return this.queue.minCursor();
  }
  /** Only events still waiting join the turn (the fleet's store does the same; see PostgresStore.startTurn). */
  async startTurn(scope: string, channel: string, eventIds: readonly string[]): Promise<number> {
    return this.queue.startTurn(
      scope,
      channel,
      eventIds.filter((id) => this.queue.event(id)?.state === "waiting"),
    );
  }
  async turn(id: number): Promise<TurnRecord | undefined> {
    return this.queue.turn(id);
  }
  async openTurns(): Promise<TurnRecord[]> {
    return this.queue.openTurns();
  }
  async updateTurn(t: TurnUpdate): Promise<void> {
    this.queue.updateTurn(t);
  }
  async recordReply(turnId: number, replyId: string): Promise<void> {
    this.queue.recordReply(turnId, replyId);
  }
  // Each of these reads and writes synchronously: atomic, as nothing else runs in between.
  async joinTurn(turnId: number, eventIds: readonly string[]): Promise<string[]> {
    const t = this.queue.turn(turnId);
    if (t?.state !== "running") return [];
    const ids = eventIds.filter((id) => {
      const e = this.queue.event(id);
      return e?.state === "waiting" && e.scope === t.scope;
    });
    if (ids.length) this.queue.joinTurn(turnId, ids);
    return ids;
  }
  async leaveTurn(turnId: number, eventIds: readonly string[]): Promise<void> {
    this.queue.leaveTurn(
      turnId,
      eventIds.filter((id) => this.queue.event(id)?.turn_id === turnId),
    );
  }
  async replaceQueuedContent(eventId: string, content: string, editId: string): Promise<boolean> {
    const e = this.queue.event(eventId);
    const queued =
      e?.state === "waiting" || (e?.state === "in_turn" && e.turn_id !== null && this.queue.turn(e.turn_id)?.state === "queued");
    return queued && this.queue.replaceContent(eventId, content, editId);
  }
  async dropWaiting(eventId: string): Promise<boolean> {
    if (this.queue.event(eventId)?.state !== "waiting") return false;
    this.queue.setEventStates([eventId], "deleted");
    return true;
  }
  async claimControl(eventId: string, createdAt: number): Promise<boolean> {
    return this.queue.claimControl(eventId, createdAt);
  }
  async claimOnce(key: string, windowMs: number): Promise<boolean> {
    return this.queue.claimOnce(key, windowMs);
  }
  async markActive(key: string, at: number): Promise<void> {
    this.queue.markActive(key, at);
  }
  async activeSince(sinceMs: number): Promise<{ key: string; at: number }[]> {
    return this.queue.activeSince(sinceMs);
  }
  async saveSession(scope: string, agent: string, sessionId: string): Promise<void> {
    this.queue.saveSession(scope, agent, sessionId);
  }
  async session(scope: string, agent: string): Promise<string | undefined> {
    return this.queue.session(scope, agent);
  }
  async forgetSession(scope: string): Promise<void> {
    this.queue.forgetSession(scope);
  }
  async forgetChannelSessions(channel: string): Promise<void> {
    this.queue.forgetChannelSessions(channel);
  }
  async prune(olderThanMs: number, now?: number): Promise<void> {
    this.queue.prune(olderThanMs, now);
  }
  async close(): Promise<void> {
    this.queue.close();
  }
}
