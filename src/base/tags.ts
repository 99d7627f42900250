/**
 * Reading Nostr tags (`[name, value, ...]` arrays, docs/protocol.md §4). Pure helpers over
 * any `{ tags }`, so the bridge, the dev relay and the tools read a tag the same way.
 */

type Tagged = { readonly tags: readonly (readonly string[])[] };

/** The value of the first `name` tag, or undefined when there is none. */
export function tagValue(ev: Tagged, name: string): string | undefined {
  return ev.tags.find((t) => t[0] === name)?.[1];
}

/** The non-empty values of every `name` tag, in order (repeats kept). */
export function tagValues(ev: Tagged, name: string): string[] {
  const out: string[] = [];
  for (const t of ev.tags) if (t[0] === name && t[1]) out.push(t[1]);
  return out;
}

/** True when some `name` tag has exactly `value` (any value when `value` is omitted). */
export function hasTag(ev: Tagged, name: string, value?: string): boolean {
  return ev.tags.some((t) => t[0] === name && (value === undefined || t[1] === value));
}
