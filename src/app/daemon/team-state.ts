/**
 * A daemon of one agent becoming a team (docs/configuration.md "Moving an agent into a
 * team"): the agent's state sat in `state_dir` itself, a team keeps each agent's in
 * `state_dir/agents/<id>`. Left where it was, the agent's queue — mentions accepted and not
 * yet answered, the relay cursor, its sessions — would be silently abandoned and the agent
 * would start afresh. So a team started on such a directory moves it, under the team's
 * state lock and before any agent opens its own: `queue.db` (with its WAL), the sandbox
 * HOMEs (`homes/`) and, when the agent works in the default place, `work/`. The queue names
 * its identity (SqliteStore.noteIdentity); a queue of no agent of the team, or one whose
 * agent already has state of its own, is left alone and said so at warn.
 */
import { existsSync, mkdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../base/log.js";
import type { LoadedTeam } from "../../config/load.js";
import { SqliteStore, STORE_FILE } from "../../queue/index.js";

export function adoptSingleAgentState(team: LoadedTeam, log: Logger): void {
  const dir = team.stateDir;
  if (!existsSync(join(dir, STORE_FILE)) || team.members[0]!.config.state.backend !== "sqlite") return;
  const identity = SqliteStore.identityIn(dir);
  const member = team.members.find((m) => m.pubkey === identity);
  const left = (why: string) =>
    log.warn(
      { evt: "team.state_left", file: join(dir, STORE_FILE), identity: identity ?? null },
      `${join(dir, STORE_FILE)} is a single agent's queue that no agent of this team takes over: ${why}; move it by hand to keep what it holds (docs/configuration.md, "Moving an agent into a team")`,
    );
  if (!member) return left(identity ? `its identity (${identity}) is none of the team's agents` : "it does not say whose it is");
  const own = member.config.state_dir;
  if (existsSync(join(own, STORE_FILE))) return left(`agent ${member.team!.id} has a queue of its own already (${join(own, STORE_FILE)})`);
  mkdirSync(own, { recursive: true, mode: 0o700 });
  const moved: string[] = [];
  const move = (name: string) => {
    if (!existsSync(join(dir, name)) || existsSync(join(own, name))) return;
    renameSync(join(dir, name), join(own, name));
    moved.push(name);
  };
  for (const name of [STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`, "homes"]) move(name);
  // Its working directories move only when its entry keeps the default place (agents/<id>/work).
  if (member.config.agent.cwd.startsWith(`${join(own, "work")}/`)) move("work");
  log.info(
    { evt: "team.state_moved", agent: member.team!.id, from: dir, to: own, moved },
    `agent ${member.team!.id}'s state from before the team moved to ${own}`,
  );
}
