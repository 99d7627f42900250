/**
 * A team on `state.backend: postgres` (docs/configuration.md "Several agents in one
 * daemon"): its agents share one database, each in a schema of its own bound to its own
 * identity (`buzz_bridge_<id>`), so a fleet of the same team on several machines divides
 * each agent's work as a fleet of one agent does. Two agents in one daemon each answer their
 * own mention once; each agent's accepted mention is in its own schema only.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import type { Event } from "nostr-tools";
import { stringify } from "yaml";
import { World } from "../kit/world.js";
import { entries, teamAgents, teamShared } from "./fixtures/team.js";
import { waitFor } from "../kit/wait.js";
import { usePostgres } from "../kit/postgres.js";
import { mentionSettled } from "../kit/settle.js";
import { parentOf } from "../kit/channel-oracle.js";
import { message } from "../src/nostr/events.js";

const pgs = usePostgres();

test("two agents of a team on PostgreSQL: each answers its own mention once, each bound to a schema of its own", {
  timeout: 120_000,
}, async (ctx) => {
  if (pgs.skip) return ctx.skip(pgs.skip);
  const url = await pgs.server!.createDatabase();
  const w = await World.create({ channelName: "pg-team-room" });
  try {
    const agents = await teamAgents(w, 1);
    const shared = teamShared(w, { relay: { presence: false }, state: { backend: "postgres", url: "${BUZZ_BRIDGE_DATABASE_URL}" } });
    const file = join(w.dir, "pg-team.yaml");
    writeFileSync(file, stringify({ ...shared, agents: entries(agents) }));
    const d = await w.startDaemon({}, { configFile: file, waitStarted: false, env: { BUZZ_BRIDGE_DATABASE_URL: url } });
    await d.waitLog((l) => l.evt === "team.started");
    const id = (i: number) => agents[i]!.pk.slice(0, 16);
    const owner = await w.owner.relay();
    const asked: Event[] = [];
    for (const [i, a] of agents.entries()) {
      const { event, outcome } = await owner.send(message(w.channel, `agent ${i}, are you there?`, { mentions: [a.pk] }));
      assert.equal(outcome.status, "accepted");
      asked.push(event);
    }
    for (const [i, ev] of asked.entries()) {
      await waitFor(
        () =>
          mentionSettled(
            d.logs.filter((l) => l.agent === id(i)),
            ev.id,
          ),
        { what: `agent ${i}'s turn to end` },
      );
      const replies = (await owner.query([{ kinds: [9], "#e": [ev.id] }])).filter((e) => parentOf(e) === ev.id);
      assert.deepEqual(
        replies.map((r) => r.pubkey),
        [agents[i]!.pk],
        `exactly one reply to agent ${i}'s mention, by agent ${i}`,
      );
    }
    assert.equal(await d.stop(), 0);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      for (const [i, ev] of asked.entries()) {
        const schema = `buzz_bridge_${id(i)}`;
        const identity = await c.query<{ value: string }>(`SELECT value FROM ${schema}.meta WHERE key = 'identity'`);
        assert.equal(identity.rows[0]?.value, agents[i]!.pk, `${schema} is bound to agent ${i}`);
        const events = await c.query<{ id: string }>(`SELECT id FROM ${schema}.events`);
        assert.deepEqual(
          events.rows.map((r) => r.id),
          [ev.id],
          `${schema} holds agent ${i}'s mention alone`,
        );
      }
    } finally {
      await c.end();
    }
  } finally {
    await w.close();
  }
});
