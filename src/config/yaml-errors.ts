/**
 * The YAML parser's syntax errors in words about the file a person wrote. An indentation
 * slip is the usual one, and the parser reports it where it noticed, often the line
 * *before* the slip ("Nested mappings are not allowed in compact mappings" on `command: x`
 * when the line under it is indented one space too deep). Here such errors are moved to
 * the line that is off and say which column it should start at. Everything else keeps
 * the parser's first line.
 */
import type { YAMLError } from "yaml";

export interface SyntaxProblem {
  line: number;
  col: number;
  message: string;
}

const indentOf = (l: string) => l.length - l.trimStart().length;
const isContent = (l: string | undefined) => l !== undefined && l.trim() !== "" && !l.trimStart().startsWith("#");
const keyOf = (l: string) => /^\s*(?:-\s+)?([^:#]+?):(?:\s|$)/.exec(l)?.[1]?.trim();

export function explainYamlErrors(
  text: string,
  errors: readonly YAMLError[],
  linePos: (offset: number) => { line: number; col: number },
): SyntaxProblem[] {
  if (errors.length === 0) return [];
  const lines = text.split("\n");
  // A key without its colon derails the parser from that line on: its errors land on the
  // lines after it (siblings "line up with no key"), so the missing colon alone is reported,
  // with whatever the parser found before it.
  const firstError = Math.min(...errors.map((e) => linePos(e.pos[0]).line));
  const colonless = missingColons(text).filter((p) => p.line <= firstError);
  if (!colonless.length) return explainEach(lines, errors, linePos);
  const from = colonless[0]!.line;
  const before = errors.filter((e) => linePos(e.pos[0]).line < from);
  return [...explainEach(lines, before, linePos), ...colonless];
}

/** Each parser error in words, on the line that is off. */
function explainEach(
  lines: string[],
  errors: readonly YAMLError[],
  linePos: (offset: number) => { line: number; col: number },
): SyntaxProblem[] {
  const out: SyntaxProblem[] = [];
  const seen = new Set<string>();
  const push = (p: SyntaxProblem) => {
    const k = `${p.line}:${p.message}`;
    if (!seen.has(k)) seen.add(k), out.push(p);
  };
  for (const e of errors) {
    const pos = linePos(e.pos[0]);
    const raw = e.message.split("\n")[0]!;
    const here = lines[pos.line - 1] ?? "";
    if (e.code === "BLOCK_AS_IMPLICIT_KEY" || e.code === "MULTILINE_IMPLICIT_KEY" || e.code === "MISSING_CHAR") {
      // The culprit is the next content line indented deeper than a line that already has its value.
      const owner = findOwner(lines, pos.line);
      if (owner) {
        const { ownerLine, deeper } = owner;
        const ownerText = lines[ownerLine - 1]!;
        const key = keyOf(ownerText);
        const col = indentOf(ownerText) + 1;
        push({
          line: deeper,
          col: indentOf(lines[deeper - 1]!) + 1,
          message:
            `bad indentation: this line starts at column ${indentOf(lines[deeper - 1]!) + 1}, deeper than ${key ? `'${key}'` : "the line"} on line ${ownerLine}, which already has a value; ` +
            `start it at column ${col} like ${key ? `'${key}'` : "that line"} (keys of one mapping line up)`,
        });
        continue;
      }
    }
    if (e.code === "BAD_INDENT" && /same column/.test(raw)) {
      const key = keyOf(here);
      const levels = enclosingColumns(lines, pos.line);
      const where = levels.map((l) => `${l.col} (line ${l.line})`).join(" or ");
      push({
        line: pos.line,
        col: indentOf(here) + 1,
        message: `bad indentation: ${key ? `'${key}'` : "this line"} starts at column ${indentOf(here) + 1}, which lines up with no key above it; start it at column ${where || 1} (keys of one mapping line up)`,
      });
      continue;
    }
    push({ line: pos.line, col: pos.col, message: `YAML syntax: ${raw}` });
  }
  return out;
}

/** From the reported line on: a line with a value followed by a content line indented deeper. */
function findOwner(lines: string[], from: number): { ownerLine: number; deeper: number } | undefined {
  for (let i = Math.max(1, from); i <= lines.length; i++) {
    const l = lines[i - 1]!;
    if (!isContent(l)) continue;
    const hasValue = /:\s+\S/.test(l.replace(/#.*$/, "")) || /^\s*-\s+\S/.test(l);
    let j = i + 1;
    while (j <= lines.length && !isContent(lines[j - 1])) j++;
    if (j > lines.length) return undefined;
    if (hasValue && indentOf(lines[j - 1]!) > indentOf(l) && !/^\s*-\s/.test(lines[j - 1]!)) return { ownerLine: i, deeper: j };
    if (i > from + 1) return undefined; // only the reported line and the one after it
  }
  return undefined;
}

/** The columns of the mappings open above `line`: its previous content line, then each shallower ancestor. */
function enclosingColumns(lines: string[], line: number): { col: number; line: number }[] {
  const out: { col: number; line: number }[] = [];
  let limit = Infinity;
  for (let i = line - 1; i >= 1 && limit > 0; i--) {
    const l = lines[i - 1];
    if (!isContent(l)) continue;
    const ind = indentOf(l!);
    if (ind < limit) {
      out.push({ col: ind + 1, line: i });
      limit = ind;
    }
  }
  return out;
}

/**
 * Lines that read `key value` where `key: value` was meant: a word, a space and a value, no
 * mapping colon, where a mapping key belongs (the line opens a mapping's block under a
 * `parent:` line, or a key of that mapping sits at the same column just above or below).
 * Lines inside a text block (`|`, `>`) are text, never keys.
 */
export function missingColons(text: string): SyntaxProblem[] {
  const lines = text.split("\n");
  const out: SyntaxProblem[] = [];
  const content: Array<{ line: number; indent: number; text: string }> = [];
  let blockIndent = -1;
  lines.forEach((raw, i) => {
    if (!isContent(raw)) return;
    const indent = indentOf(raw);
    if (blockIndent >= 0 && indent > blockIndent) return;
    blockIndent = -1;
    const body = raw.replace(/\s+#.*$/, "").trimEnd();
    if (/:\s*[|>][-+0-9]*$/.test(body)) blockIndent = indent;
    content.push({ line: i + 1, indent, text: body });
  });
  /** The column (0-based) a line's key starts at, after a list item's dash; undefined for a line that is no `key:`. */
  const keyColumn = (t: string) => {
    const k = /^(\s*(?:-\s+)?)[^\s:#][^:#]*?:(?:\s|$)/.exec(t);
    return k ? k[1]!.length : undefined;
  };
  content.forEach((c, i) => {
    // A list item's own text (`- run now`) is a string, never a key.
    const m = /^(\s*)([A-Za-z_][A-Za-z0-9_-]*)\s+(\S.*)$/.exec(c.text);
    if (!m || /:(\s|$)/.test(c.text) || /^["'[{]/.test(m[3]!)) return;
    const col = m[1]!.length;
    const prev = content[i - 1];
    const next = content[i + 1];
    const opens = prev !== undefined && prev.indent < col && /:$/.test(prev.text);
    const sibling = (n: typeof prev) => n !== undefined && keyColumn(n.text) === col;
    if (!opens && !sibling(prev) && !sibling(next)) return;
    const key = m[2]!;
    const value = m[3]!.trim();
    out.push({ line: c.line, col: col + 1, message: `missing ':' after '${key}': write it as ${key}: ${value}` });
  });
  return out;
}
