/** The prompt step (docs/architecture.md §3): standing context once per session, then per-turn blocks. */
export { buildStanding, BASE_PROMPT, type StandingContext, type StandingInput } from "./standing.js";
export { TurnPromptBuilder, type EditedEvent, type MidTurnFraming, type TurnInput, type TurnPromptOptions } from "./turn.js";
export { PromptSession, settingsOf, type SessionSettings } from "./session.js";
export { fence, type TextBlock } from "./text.js";
