/**
 * What the proxy lists: the union of its downstream servers' tools under the naming
 * rules, one merged entry per hook name, and the built-in buzz tools. Rebuilt whenever
 * a downstream's list changes; routes map each exposed name back to its owner.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../base/log.js";
import type { Downstream } from "./downstream.js";
import { CALL_HOOKS } from "./tool-gates.js";
import { exposedName, isHookName, isValidExposedName, MAX_TOOLS, NameCollisionError } from "./naming.js";

interface ToolRoute {
  ds: Downstream;
  tool: string;
}

export interface Catalog {
  tools: Tool[];
  routes: Map<string, ToolRoute>;
  /** Hook name → servers that have it, in config order. */
  hooks: Map<string, Downstream[]>;
  /** Set when two servers offer the same exposed name: tools/list fails with it. */
  collision?: NameCollisionError;
  /** What the naming rules changed or left out, in the order met (also logged; doctor reports them). */
  notes: CatalogNote[];
}

type CatalogNote =
  /** A tool name that breaks the rules, listed under another. */
  | { kind: "renamed"; server: string; tool: string; as: string }
  /** A hook whose name is not a valid tool name: ignored. */
  | { kind: "hook_name_invalid"; server: string; tool: string }
  /** More tools than one session may list: the last ones are dropped. */
  | { kind: "too_many_tools"; limit: number; dropped: string[] };

const BUILTIN_OWNER = "buzz (built-in tools)";

export function buildCatalog(downstreams: Downstream[], builtins: Tool[], logger: Logger): Catalog {
  const owners = new Map<string, string>();
  for (const t of builtins) owners.set(t.name, BUILTIN_OWNER);
  const routes = new Map<string, ToolRoute>();
  const hooks = new Map<string, Downstream[]>();
  const hookDefs = new Map<string, Tool>();
  const visible: Tool[] = [];
  let collision: NameCollisionError | undefined;
  const notes: CatalogNote[] = [];
  for (const ds of downstreams) {
    for (const t of ds.tools) {
      if (isHookName(t.name)) {
        if (!isValidExposedName(t.name)) {
          logger.error({
            evt: "proxy.hook_name_invalid",
            server: ds.name,
            tool: t.name,
            error: "hook names must match [A-Za-z0-9_-], have no '__' and fit the name budget",
          });
          notes.push({ kind: "hook_name_invalid", server: ds.name, tool: t.name });
          continue;
        }
        const list = hooks.get(t.name) ?? [];
        list.push(ds);
        hooks.set(t.name, list);
        if (!hookDefs.has(t.name)) hookDefs.set(t.name, t);
        continue;
      }
      const { name, changed } = exposedName(ds.name, t.name, ds.cfg.prefix);
      if (changed) {
        logger.warn({ evt: "proxy.tool_renamed", server: ds.name, tool: t.name, as: name });
        notes.push({ kind: "renamed", server: ds.name, tool: t.name, as: name });
      }
      const owner = owners.get(name);
      if (owner !== undefined) {
        collision ??= new NameCollisionError(name, owner, ds.name);
        logger.error({
          evt: "proxy.name_collision",
          tool: name,
          servers: [owner, ds.name],
          error: new NameCollisionError(name, owner, ds.name).message,
        });
        continue;
      }
      owners.set(name, ds.name);
      routes.set(name, { ds, tool: t.name });
      visible.push(name === t.name ? t : { ...t, name });
    }
  }
  // The bridge asks _PreToolUse and _PostToolUse itself around each call; the model never sees them.
  const hookTools = [...hookDefs.values()].filter((t) => !CALL_HOOKS.has(t.name));
  const room = MAX_TOOLS - hookTools.length - builtins.length;
  if (visible.length > room) {
    const dropped = visible.splice(Math.max(0, room));
    for (const t of dropped) routes.delete(t.name);
    logger.error({ evt: "proxy.too_many_tools", limit: MAX_TOOLS, dropped: dropped.map((t) => t.name) });
    notes.push({ kind: "too_many_tools", limit: MAX_TOOLS, dropped: dropped.map((t) => t.name) });
  }
  return { tools: [...visible, ...hookTools, ...builtins], routes, hooks, collision, notes };
}
