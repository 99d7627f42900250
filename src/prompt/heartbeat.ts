/**
 * The prompt of a heartbeat turn: the standing context on the heartbeat session's first
 * turn (when it did not go out as systemPrompt), then one block that says this is a timer
 * and not a person, where posts land, and ends with the configured text (written by the
 * operator, so not fenced as untrusted).
 */
import { buildStanding, channelLines, type StandingInput } from "./standing.js";
import { settingsOf, type PromptSession } from "./session.js";
import { block, joined, operatorText, p, timeText, type TextBlock } from "./text.js";

export function heartbeatBlocks(session: PromptSession, standing: StandingInput, text: string, at = new Date()): TextBlock[] {
  const blocks: TextBlock[] = [];
  if (!session.standingSent) {
    blocks.push(...buildStanding(standing).blocks);
    session.standingSent = true;
    session.settings = settingsOf(standing);
  }
  blocks.push(
    block(
      joined([
        p`Heartbeat (${timeText(at.getTime() / 1000)}): a timer prompt in your own heartbeat session, not a message from anyone.`,
        ...channelLines(standing.channel),
        p`Anything you post with send_message goes top-level into this channel; post nothing when there is nothing to say.`,
        p``,
        operatorText(text.trim()),
      ]),
    ),
  );
  return blocks;
}
