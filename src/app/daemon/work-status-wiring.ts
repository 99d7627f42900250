/**
 * The work status board (turn/work-status.ts) as the daemon builds it: snapshots go to the
 * relay like any publish (retried, queued behind replies), and tool titles are redacted of
 * the state directory's paths and of the secrets this daemon holds (its key, the fleet
 * database's password) before anyone sees them.
 */
import { realpathSync } from "node:fs";
import { nip19 } from "nostr-tools";
import { bytesToHex } from "nostr-tools/utils";
import type { LoadedConfig } from "../../config/load.js";
import type { RelayClient } from "../../relay/client.js";
import type { PublishStatus } from "../../relay/outcome.js";
import { WorkStatusBoard } from "../../turn/work-status.js";

export function workStatusBoard(
  relay: Pick<RelayClient, "send">,
  loaded: Pick<LoadedConfig, "config" | "secretKey">,
  onOutcome: (status: PublishStatus) => void,
): WorkStatusBoard {
  const dir = loaded.config.state_dir;
  const dirs = [dir];
  try {
    const real = realpathSync(dir);
    if (real !== dir) dirs.push(real);
  } catch {
    // not created yet: its configured path is the one titles would show
  }
  const secrets = [bytesToHex(loaded.secretKey), nip19.nsecEncode(loaded.secretKey)];
  const dbPassword = passwordOf(loaded.config.state.url);
  if (dbPassword) secrets.push(dbPassword);
  return new WorkStatusBoard({
    publish: (t) =>
      void relay.send(t).then(
        (r) => onOutcome(r.outcome.status),
        () => undefined,
      ),
    redact: { privateDirs: dirs, secrets },
  });
}

function passwordOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}
