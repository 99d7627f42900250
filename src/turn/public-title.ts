/**
 * What a tool call shows channel members (the work status and the "still working" note,
 * docs/security.md). By default (`tool_titles: brief`) no argument text: the tool's kind
 * (`shell`, `fetch`…), its name when the agent's title is a bare tool name (an MCP tool's
 * `send_message`), and for file tools the file's path relative to the workspace unless the
 * path is secret-shaped. `tool_titles: full` shows the agent's whole title. Either way the
 * result passes the redactor (redact-title.ts), so a name or path never carries a secret.
 */

export type ToolTitles = "brief" | "full";

/** The part of an ACP tool call (or its update) a public title is made from. */
export interface ToolCallView {
  title?: string | null;
  kind?: string | null;
  locations?: { path: string }[] | null;
}

/** ACP's tool kinds as a member reads them: a command line is `shell`. */
const KIND_WORD: Record<string, string> = {
  execute: "shell",
  read: "read",
  edit: "edit",
  delete: "delete",
  move: "move",
  search: "search",
  fetch: "fetch",
  think: "think",
  switch_mode: "switch mode",
};
const FILE_KINDS = new Set(["read", "edit", "delete", "move"]);

/** A title that is only a tool's name (no spaces, no argument). */
const BARE_NAME = /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/;

/** File names whose mere path hints at a credential: never shown, even as a path. */
const SECRET_PATH =
  /(?:^|\/)(?:\.env(?:\.[^/]*)?|\.npmrc|\.pypirc|\.netrc|\.pgpass|\.git-credentials|\.htpasswd|\.docker\/config\.json|\.aws\/[^/]*|\.ssh\/[^/]*|id_(?:rsa|dsa|ecdsa|ed25519)[^/]*|[^/]*(?:secret|credential|password|passwd|token|private)[^/]*|[^/]*\.(?:pem|key|p12|pfx|jks|keystore|kdbx|gpg|asc))$/i;

/**
 * The public title of a tool call, or undefined when the update carries nothing to show (a
 * status-only update keeps the title shown before). `redact` is the redactor with the
 * daemon's private paths and secrets.
 */
export function publicTitle(u: ToolCallView, mode: ToolTitles, redact: (t: string) => string, workspace?: string): string | undefined {
  const title = u.title?.trim();
  if (mode === "full") return title ? redact(title) : undefined;
  if (!title && !u.kind) return undefined;
  const kind = u.kind ?? "other";
  if (FILE_KINDS.has(kind)) {
    const path = u.locations?.[0]?.path;
    const shown = path ? shownPath(path, workspace) : undefined;
    return redact(shown ? `${KIND_WORD[kind]} ${shown}` : KIND_WORD[kind]!);
  }
  if (title && BARE_NAME.test(title) && (kind === "other" || !KIND_WORD[kind])) return redact(title);
  return KIND_WORD[kind] ?? "tool";
}

/** The path relative to the workspace (or its file name), unless it is secret-shaped. */
function shownPath(path: string, workspace: string | undefined): string | undefined {
  const ws = workspace?.replace(/\/+$/, "");
  const rel = ws && path.startsWith(`${ws}/`) ? path.slice(ws.length + 1) : path.startsWith("/") ? path.split("/").pop() : path;
  if (!rel || SECRET_PATH.test(path) || SECRET_PATH.test(rel)) return undefined;
  return rel;
}
