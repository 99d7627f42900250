/**
 * The PostgreSQL schema, as numbered migrations applied in order at start (under an
 * advisory lock, so daemons starting together migrate once). Everything lives in its own
 * schema, `buzz_bridge` (a team's agent: `buzz_bridge_<id>`, pgSchemaFor), so the database
 * may be shared with other software (a Buzz relay deployment's PostgreSQL, for one). Never edit a released migration: add the next one.
 */
export const PG_SCHEMA = "buzz_bridge";

/**
 * The schema of one identity's queue: `buzz_bridge` for a daemon of one agent, and
 * `buzz_bridge_<id>` for a team's agent (its id: 16 hex digits of its pubkey), so the agents
 * of a team share one database, each bound to its own identity.
 */
export function pgSchemaFor(teamAgentId?: string): string {
  return teamAgentId === undefined ? PG_SCHEMA : `${PG_SCHEMA}_${teamAgentId}`;
}

/** Key of the session-level advisory lock held while migrating ("buzz" in ASCII). */
export const MIGRATION_LOCK_KEY = 0x62757a7a;

export interface Migration {
  version: number;
  sql: string;
}

/** The migrations, in the schema `S`. */
export function migrations(S: string): readonly Migration[] {
  return [
    {
      version: 1,
      sql: `
CREATE TABLE ${S}.events (
  id text PRIMARY KEY,
  channel text NOT NULL,
  scope text NOT NULL,
  created_at bigint NOT NULL,
  accepted_at bigint NOT NULL,
  state text NOT NULL,
  turn_id bigint,
  json text NOT NULL
);
CREATE INDEX events_open ON ${S}.events (state, scope, created_at);
CREATE INDEX events_turn ON ${S}.events (turn_id);
CREATE TABLE ${S}.turns (
  id bigserial PRIMARY KEY,
  scope text NOT NULL,
  channel text NOT NULL,
  state text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL DEFAULT 0,
  reply_ids jsonb NOT NULL DEFAULT '[]',
  trigger_ids jsonb NOT NULL DEFAULT '[]',
  recovered integer NOT NULL DEFAULT 0,
  error text,
  updated_at bigint NOT NULL
);
CREATE INDEX turns_open ON ${S}.turns (state, scope);
CREATE TABLE ${S}.cursors (channel text PRIMARY KEY, created_at bigint NOT NULL);
CREATE TABLE ${S}.controls (id text PRIMARY KEY, created_at bigint NOT NULL);
CREATE TABLE ${S}.claims (key text PRIMARY KEY, at bigint NOT NULL);
CREATE TABLE ${S}.sessions (scope text PRIMARY KEY, agent text NOT NULL, session_id text NOT NULL, updated_at bigint NOT NULL);
-- One row per scope that has had work: who holds it, until when (the database's clock).
CREATE TABLE ${S}.scopes (
  key text PRIMARY KEY,
  channel text NOT NULL,
  holder text,
  lease_until timestamptz
);
CREATE INDEX scopes_holder ON ${S}.scopes (holder);
-- The fleet's daemons, each renewing seen_at while it lives.
CREATE TABLE ${S}.daemons (
  id text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  max_concurrent integer NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  seen_at timestamptz NOT NULL DEFAULT now()
);
`,
    },
    {
      // A message that joined a running turn mid-way (a steer): how many replies the turn had recorded then.
      version: 2,
      sql: `ALTER TABLE ${S}.events ADD COLUMN joined_after integer;`,
    },
    {
      // When a provider's limit first held a turn (Unix ms), so queue.hold_max bounds its holds together.
      version: 3,
      sql: `ALTER TABLE ${S}.turns ADD COLUMN held_since bigint;`,
    },
  ];
}

export const MIGRATIONS = migrations(PG_SCHEMA);
export const PG_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;
