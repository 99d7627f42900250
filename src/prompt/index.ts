/** The prompt step (docs/architecture.md §3): standing context once per session, then per-turn blocks. */
export { buildStanding, type StandingInput } from "./standing.js";
export { TurnPromptBuilder, type MidTurnFraming } from "./turn.js";
export { PromptSession } from "./session.js";
