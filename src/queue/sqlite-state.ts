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
  async startTurn(scope: string, channel: string, eventIds: readonly string[]): Promise<number> {
    return this.queue.startTurn(scope, channel, eventIds);
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
  async claimControl(eventId: string, createdAt: number): Promise<boolean> {
    return this.queue.claimControl(eventId, createdAt);
  }
  async claimOnce(key: string, windowMs: number): Promise<boolean> {
    return this.queue.claimOnce(key, windowMs);
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
