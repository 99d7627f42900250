/**
 * What one agent session has already been told: whether the standing context went out,
 * the settings it was given (to announce changes once), and the ids of messages already
 * shown (so history is not repeated). One per agent session; dropped with the session.
 */
import type { StandingInput } from "./standing.js";
import { BoundedMap } from "../base/bounded-map.js";

/** The settings a running session is told about again when they change. */
export interface SessionSettings {
  channelName: string;
  about: string;
  teamInstructions: string;
  persona: string;
}

export function settingsOf(s: StandingInput): SessionSettings {
  return {
    channelName: s.channel.name ?? "",
    about: s.channel.about?.trim() ?? "",
    teamInstructions: s.teamInstructions?.trim() ?? "",
    persona: s.persona?.trim() ?? "",
  };
}

export class PromptSession {
  /** False until the standing context was delivered (by systemPrompt or a first prompt). */
  standingSent: boolean;
  settings: SessionSettings;
  private readonly delivered: BoundedMap<string, true>;
  /** Messages the agent saw that their authors deleted since; told once, in the next prompt. */
  private retracted: Array<{ id: string; author: string }> = [];

  /**
   * @param standing the context the session starts with
   * @param viaSystemPrompt true when `session/new` carried it as systemPrompt; else the
   *   first turn prompt starts with the standing blocks
   * @param maxDelivered ids remembered (oldest forgotten first); default 5,000 — far more
   *   than a session's history window, small in memory
   */
  constructor(standing: StandingInput, viaSystemPrompt: boolean, maxDelivered = 5_000) {
    this.delivered = new BoundedMap(maxDelivered);
    this.standingSent = viaSystemPrompt;
    this.settings = settingsOf(standing);
  }

  wasDelivered(id: string): boolean {
    return this.delivered.has(id);
  }

  /** Marks messages as seen by the agent (prompted events, history, its own replies). */
  markDelivered(ids: Iterable<string>): void {
    for (const id of ids) this.delivered.set(id, true);
  }

  /** A message this session saw was deleted by its author (at most 50 kept until told). */
  retract(id: string, author: string): void {
    if (this.retracted.length < 50 && !this.retracted.some((r) => r.id === id)) this.retracted.push({ id, author });
  }

  takeRetractions(): Array<{ id: string; author: string }> {
    const r = this.retracted;
    this.retracted = [];
    return r;
  }
}
