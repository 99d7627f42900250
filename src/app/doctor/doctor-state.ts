/**
 * `doctor`'s checks of the fleet's database (`state.backend: postgres`): reachable, the
 * schema's version and owner, this machine's clock against the database's (leases run on
 * the database's clock; a daemon far off still mis-times retries), and the fleet's live
 * daemons with their leases. Read-only: doctor neither migrates nor claims anything.
 * Nothing is checked for SQLite: the daemon creates its file under state_dir.
 */
import pg from "pg";
import type { LoadedConfig } from "../../config/load.js";
import { redactDatabaseUrl } from "../../base/log.js";
import { FleetLeases, FLEET_LEASE_MS } from "../../queue/pg-leases.js";
import { PG_SCHEMA_VERSION, pgSchemaFor } from "../../queue/pg-migrations.js";
import type { CheckResult } from "./doctor-result.js";

/** Clock skew that doctor flags: the lease renewal interval. */
const SKEW_MARGIN_MS = FLEET_LEASE_MS / 3;

export async function stateChecks(loaded: LoadedConfig, timeoutMs: number): Promise<CheckResult[]> {
  const state = loaded.config.state;
  if (state.backend !== "postgres" || !state.url) return [];
  const where = redactDatabaseUrl(state.url);
  const schema = pgSchemaFor(loaded.team?.id);
  const pool = new pg.Pool({
    connectionString: state.url,
    max: 2,
    connectionTimeoutMillis: timeoutMs,
    application_name: "buzz-bridge doctor",
  });
  pool.on("error", () => undefined);
  try {
    let meta: Map<string, string>;
    try {
      const exists = await pool.query<{ t: string | null }>(`SELECT to_regclass('${schema}.meta')::text AS t`);
      meta = new Map();
      if (exists.rows[0]?.t)
        for (const r of (await pool.query<{ key: string; value: string }>(`SELECT key, value FROM ${schema}.meta`)).rows)
          meta.set(r.key, r.value);
    } catch (err) {
      return [
        {
          name: "database",
          mark: "fail",
          summary: `cannot use ${where}: ${redactDatabaseUrl((err as Error).message)}; check state.url and that PostgreSQL is up`,
        },
        { name: "fleet", mark: "skip", summary: "skipped: the database check failed" },
      ];
    }
    const out: CheckResult[] = [databaseResult(where, meta, loaded.pubkey)];
    if (!meta.has("schema_version")) return [...out, { name: "fleet", mark: "ok", summary: "no daemon has used this database yet" }];
    const leases = new FleetLeases(pool, schema);
    const skew = await leases.clockSkewMs();
    out.push(
      Math.abs(skew) <= SKEW_MARGIN_MS
        ? { name: "clock", mark: "ok", summary: `this machine's clock is within ${Math.abs(skew)} ms of the database's` }
        : {
            name: "clock",
            mark: "fail",
            summary: `this machine's clock is ${(skew / 1000).toFixed(1)} s ${skew > 0 ? "ahead of" : "behind"} the database's (more than ${SKEW_MARGIN_MS / 1000} s): run NTP on both`,
          },
    );
    const daemons = await leases.daemons(FLEET_LEASE_MS);
    const held = await leases.list();
    const details = daemons.map(
      (d) =>
        `${d.id}: ${d.leases} lease${d.leases === 1 ? "" : "s"} of max_concurrent ${d.maxConcurrent}, seen ${Math.round(d.seenAgoMs / 1000)} s ago`,
    );
    for (const l of held)
      details.push(
        `lease ${l.key} → ${l.holder}, ${l.expiresInMs >= 0 ? `expires in ${Math.round(l.expiresInMs / 1000)} s` : `expired ${Math.round(-l.expiresInMs / 1000)} s ago (taken over at the next claim)`}`,
      );
    const queued = await leases.queueDepth();
    out.push({
      name: "fleet",
      mark: "ok",
      summary: `${daemons.length} live daemon${daemons.length === 1 ? "" : "s"}, ${held.length} scope lease${held.length === 1 ? "" : "s"}, ${queued} mention${queued === 1 ? "" : "s"} waiting`,
      details,
    });
    return out;
  } finally {
    await pool.end().catch(() => undefined);
  }
}

function databaseResult(where: string, meta: Map<string, string>, pubkey: string): CheckResult {
  const version = meta.has("schema_version") ? Number(meta.get("schema_version")) : undefined;
  const owner = meta.get("identity");
  if (owner && owner !== pubkey)
    return {
      name: "database",
      mark: "fail",
      summary: `${where} belongs to another agent identity (pubkey ${owner}); give this fleet its own database`,
    };
  if (version === undefined)
    return { name: "database", mark: "ok", summary: `${where} reachable; empty: the first daemon to start creates the schema` };
  if (version > PG_SCHEMA_VERSION)
    return {
      name: "database",
      mark: "fail",
      summary: `${where} has schema version ${version}, newer than this buzz-bridge understands (${PG_SCHEMA_VERSION}): upgrade it`,
    };
  if (version < PG_SCHEMA_VERSION)
    return {
      name: "database",
      mark: "ok",
      summary: `${where} reachable at schema version ${version}; the next daemon to start migrates it to ${PG_SCHEMA_VERSION}`,
    };
  return { name: "database", mark: "ok", summary: `${where} reachable and migrated (schema version ${version})` };
}
