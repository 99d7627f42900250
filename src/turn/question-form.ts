/**
 * An ACP form elicitation as question cards and back (docs/conversations.md "Questions back
 * to people"). Each field of the form's schema is one card: a single choice (`oneOf` or
 * `enum`), several choices (`array` of `anyOf` / `enum` items), yes or no (`boolean`), or a
 * free answer (`string`, `number`, `integer`); a `<field>_custom` string beside a choice is
 * its "other" answer (Claude's AskUserQuestion form). The answers fold back the way the
 * Rust bridge folds them: any cancel cancels the whole form, no field answered is a decline,
 * otherwise accept with the values answered, each option given back as its `const`.
 */
import type { CardAnswer, CardQuestion } from "../nostr/cards.js";

export interface FormField {
  question: CardQuestion;
  type: "string" | "number" | "integer" | "boolean" | "array";
  /** Option label → the value the form takes. */
  values: Map<string, string | boolean>;
  /** The companion field an "other" answer goes to. */
  customKey?: string;
}

export type FormResponse =
  | { action: "accept"; content: Record<string, string | number | boolean | string[]> }
  | { action: "decline" }
  | { action: "cancel" };

const CUSTOM = "_custom";

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
const str = (v: unknown): string | undefined => (typeof v === "string" && v.trim() ? v : undefined);

/** `question_<n>` by n, then by name. */
function order(a: string, b: string): number {
  const n = (k: string) => Number(/_(\d+)$/.exec(k)?.[1] ?? Number.MAX_SAFE_INTEGER);
  return n(a) - n(b) || a.localeCompare(b);
}

/** Options of a single or multiple choice: titled (`oneOf`/`anyOf`) or plain (`enum`). */
function optionsOf(titled: unknown, plain: unknown): { label: string; value: string; description?: string }[] {
  if (Array.isArray(titled))
    return titled.flatMap((o) => {
      const e = obj(o);
      const value = str(e.const);
      const label = str(e.title) ?? value;
      return label && value !== undefined
        ? [{ label, value, ...(str(e.description) ? { description: e.description as string } : {}) }]
        : [];
    });
  if (Array.isArray(plain)) return plain.filter((v): v is string => typeof v === "string").map((v) => ({ label: v, value: v }));
  return [];
}

/** The form's fields as card questions, in the asked order; `message` is the prompt of a field with no description. */
export function formFields(requestedSchema: unknown, message: string): FormField[] {
  const props = obj(obj(requestedSchema).properties);
  const keys = Object.keys(props);
  const fields: FormField[] = [];
  for (const key of keys.sort(order)) {
    if (key.endsWith(CUSTOM) && key.slice(0, -CUSTOM.length) in props) continue;
    const p = obj(props[key]);
    const type = p.type;
    const customKey = `${key}${CUSTOM}` in props ? `${key}${CUSTOM}` : undefined;
    const base = { key, header: str(p.title), prompt: str(p.description) ?? message };
    const values = new Map<string, string | boolean>();
    let q: CardQuestion;
    let kind: FormField["type"];
    if (type === "array") {
      const opts = optionsOf(obj(p.items).anyOf, obj(p.items).enum);
      for (const o of opts) values.set(o.label, o.value);
      q = { ...base, multiSelect: true, allowCustom: !!customKey, options: opts.map(({ label, description }) => ({ label, description })) };
      kind = "array";
    } else if (type === "boolean") {
      values.set("Yes", true).set("No", false);
      q = { ...base, multiSelect: false, allowCustom: false, options: [{ label: "Yes" }, { label: "No" }] };
      kind = "boolean";
    } else if (type === "number" || type === "integer") {
      q = { ...base, multiSelect: false, allowCustom: true, options: [] };
      kind = type;
    } else {
      const opts = optionsOf(p.oneOf, p.enum);
      for (const o of opts) values.set(o.label, o.value);
      q = {
        ...base,
        multiSelect: false,
        allowCustom: !opts.length || !!customKey,
        options: opts.map(({ label, description }) => ({ label, description })),
      };
      kind = "string";
    }
    fields.push({ question: q, type: kind, values, ...(customKey ? { customKey } : {}) });
  }
  return fields;
}

/** The form's answer from its cards' answers (same order as `fields`). */
export function formResponse(fields: FormField[], answers: CardAnswer[]): FormResponse {
  if (answers.some((a) => a.action === "cancel")) return { action: "cancel" };
  const content: Record<string, string | number | boolean | string[]> = {};
  fields.forEach((f, i) => {
    const a = answers[i];
    if (a?.action !== "accept") return;
    const key = f.question.key;
    const picked = a.answer === undefined ? [] : Array.isArray(a.answer) ? a.answer : [a.answer];
    const known = picked.filter((l) => f.values.has(l));
    if (f.type === "array" && known.length) content[key] = known.map((l) => String(f.values.get(l)));
    else if (known.length) content[key] = f.values.get(known[0]!)!;
    const custom = a.custom ?? picked.find((l) => !f.values.has(l));
    if (custom === undefined) return;
    if (f.customKey) content[f.customKey] = custom;
    else if (f.type === "number" || f.type === "integer") {
      const n = Number(custom.trim());
      if (Number.isFinite(n) && (f.type === "number" || Number.isInteger(n))) content[key] = n;
    } else if (f.type === "string" && !f.values.size) content[key] = custom;
  });
  return Object.keys(content).length ? { action: "accept", content } : { action: "decline" };
}

/**
 * A plain-text answer (a reply to the question's text form, for clients that show no
 * cards): a number or numbers ("2", "1, 3") pick options, `decline`/`skip` declines,
 * `cancel` cancels, anything else is the person's own words.
 */
export function textAnswer(q: CardQuestion, text: string): CardAnswer {
  const t = text.trim();
  if (/^(decline|skip)$/i.test(t)) return { action: "decline" };
  if (/^cancel$/i.test(t)) return { action: "cancel" };
  const nums = /^\d+(\s*[,\s]\s*\d+)*$/.test(t) ? t.split(/[,\s]+/).map(Number) : [];
  if (nums.length && nums.every((n) => n >= 1 && n <= q.options.length)) {
    const labels = nums.map((n) => q.options[n - 1]!.label);
    return { action: "accept", answer: q.multiSelect ? labels : labels[0]! };
  }
  const byLabel = q.options.find((o) => o.label.toLowerCase() === t.toLowerCase());
  if (byLabel) return { action: "accept", answer: q.multiSelect ? [byLabel.label] : byLabel.label };
  return { action: "accept", custom: t };
}
