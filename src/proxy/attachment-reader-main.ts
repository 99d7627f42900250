/**
 * The attachment reader's process, which attachment-reader.ts runs in the agent's sandbox
 * and working directory: stdin `{ "attachments": [...], "maxBytes": n }` (send_message's
 * argument, already checked), stdout `{ "files": [...] }` or `{ "error": "..." }`. It reads
 * what the agent itself could read, nothing more.
 */
import { readAttachments } from "./attachment-files.js";

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
try {
  const input = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { attachments: unknown; maxBytes?: number };
  const { files } = await readAttachments({ attachments: input.attachments }, input.maxBytes);
  process.stdout.write(JSON.stringify({ files }));
} catch (err) {
  process.stdout.write(JSON.stringify({ error: (err as Error).message }));
}
