import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { jsonSchema } from "../../src/config/schema.js";

interface Node {
  type?: string;
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node;
}

/** Every leaf key path of the config schema, as the reference table (docs/configuration.md) writes it. */
function leaves(node: Node, path: string, out: string[]): string[] {
  if (node.properties) {
    for (const [k, v] of Object.entries(node.properties)) if (k !== "$schema") leaves(v, path ? `${path}.${k}` : k, out);
  } else if (node.items?.properties) {
    leaves(node.items, `${path}[]`, out);
  } else if (node.additionalProperties?.properties) {
    leaves(node.additionalProperties, `${path}.<name>`, out);
  } else out.push(path);
  return out;
}

test("the configuration reference (docs/configuration.md) names every key of the schema", () => {
  const section = readFileSync("docs/configuration.md", "utf8");
  const named = (key: string): boolean => {
    // An agents: entry takes the keys above: `agents[].…` is one row, and the key without it must be named.
    if (key.startsWith("agents[].")) return section.includes("`agents[].…`") && named(key.slice("agents[].".length));
    const [head, ...rest] = key.split("[].");
    // channel overrides share one row: `channels[].respond_to`, `allow`, …
    return (
      section.includes(`\`${key}\``) || (rest.length > 0 && section.includes(`\`${rest.join(".")}\``) && section.includes(`\`${head}[].`))
    );
  };
  const missing = leaves(jsonSchema() as Node, "", []).filter((key) => !named(key));
  assert.deepEqual(missing, []);
});

test("the README opens with the two set-up commands", () => {
  const readme = readFileSync("README.md", "utf8");
  const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)![1]!.trim().split("\n");
  assert.equal(firstBlock.length, 2);
  assert.match(firstBlock[0]!, /npm start/);
  assert.match(firstBlock[1]!, /npm test/);
});
