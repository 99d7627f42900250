/**
 * send_message's `attachments` (paths) read into `files` (bytes), where the agent's files
 * are: in the stdio proxy, which the agent started (buzz-tool-listing.ts), or for the daemon's
 * HTTP slot in a short-lived reader run in the agent's sandbox (attachment-reader.ts). The
 * daemon itself never opens a path an agent names.
 */
import { readFile, stat } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { typeForName } from "../base/mime.js";

/** Files per reply before the daemon's own limit is known (the config's default). */
export const DEFAULT_ATTACHMENT_MAX_BYTES = 10 * 1024 * 1024;

/**
 * send_message's `attachments` (paths) become `files` (bytes): the proxy runs where the
 * agent's files are, with the agent's own access to them, so it reads them; the daemon
 * never opens a path an agent names. Arguments of the wrong shape go on as they are, for
 * the daemon to refuse with its message.
 */
export async function readAttachments(
  args: Record<string, unknown>,
  maxBytes = DEFAULT_ATTACHMENT_MAX_BYTES,
): Promise<Record<string, unknown>> {
  const list = args.attachments;
  if (!Array.isArray(list)) return args;
  const { attachments: _, ...rest } = args;
  const files = [];
  for (const a of list as Array<{ path?: unknown; name?: unknown; mime?: unknown; alt?: unknown }>) {
    if (typeof a?.path !== "string" || !a.path) throw new Error("attachments: each needs a path");
    const path = resolve(a.path);
    const size = (
      await stat(path).catch((err: NodeJS.ErrnoException) => {
        throw new Error(`attachment ${a.path}: ${err.code === "ENOENT" ? "no such file" : err.message}`);
      })
    ).size;
    if (size > maxBytes)
      throw new Error(`attachment ${a.path} is ${size} bytes, more than the ${maxBytes} allowed (attachments.max_bytes)`);
    const name = typeof a.name === "string" && a.name ? a.name : basename(path);
    files.push({
      name,
      mime: typeof a.mime === "string" && a.mime ? a.mime : typeForName(name),
      ...(typeof a.alt === "string" ? { alt: a.alt } : {}),
      data: (await readFile(path)).toString("base64"),
    });
  }
  return { ...rest, files };
}
