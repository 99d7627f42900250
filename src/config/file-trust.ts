/**
 * Who could change the files the daemon trusts — the key file, the config file, the state
 * directory — checked as OpenSSH checks `~/.ssh` (docs/security.md): the path and every
 * directory above it must belong to this user or root, and no one else may write to them.
 *
 *   refused  the key or config file (or the state directory) owned by another user, or
 *            writable by group or others; a directory above any of them that another user
 *            owns, or that others may write to without the sticky bit (/tmp's kind is fine)
 *   warned   a directory above them that its group may write to: common on shared hosts
 *            and not always a mistake, so it is said, with the fix, and the daemon goes on
 *
 * Each message names the path, what is wrong and the command that fixes it.
 */
import { realpathSync, statSync, type Stats } from "node:fs";
import { userInfo } from "node:os";
import { dirname } from "node:path";

export interface TrustCheck {
  /** Why the daemon must not use the path (first problem found); undefined when it may. */
  refused?: string;
  warnings: string[];
}

const mode = (st: Stats) => `0${(st.mode & 0o777).toString(8).padStart(3, "0")}`;

/** This process's uid, or undefined where there are none (Windows: nothing is checked). */
function myUid(): number | undefined {
  return process.getuid?.();
}

function me(): string {
  try {
    return userInfo().username;
  } catch {
    return String(myUid());
  }
}

const trusted = (uid: number) => uid === 0 || uid === myUid();

/** "root", or "alice (uid 1000) or root". */
const whoMayOwn = () => (myUid() === 0 ? "root" : `${me()} (uid ${myUid()}) or root`);

/**
 * Checks `path` (what: "secret key file", "config file", "state_dir") and the directories
 * above it. `ownerMatters`: false where this user only reads and another user is expected
 * to own the path (doctor looking at a service's state directory); modes still count.
 */
export function checkTrust(path: string, what: string, o: { ownerMatters?: boolean } = {}): TrustCheck {
  const out: TrustCheck = { warnings: [] };
  if (myUid() === undefined) return out;
  let real: string;
  let st: Stats;
  try {
    real = realpathSync(path);
    st = statSync(real);
  } catch {
    return out; // a path that cannot be read is reported where it is read, with its own error
  }
  const shown = real === path ? path : `${path} (${real})`;
  if (o.ownerMatters !== false && !trusted(st.uid)) {
    out.refused = `${what} ${shown} is owned by uid ${st.uid}, not by ${whoMayOwn()}: that user can change it; chown ${me()} ${real}${myUid() === 0 ? "" : " (or give it to root)"}`;
    return out;
  }
  if (st.mode & 0o022) {
    const who = st.mode & 0o002 ? "everyone" : "its group";
    out.refused = `${what} ${shown} has mode ${mode(st)}: ${who} can change it; chmod go-w ${real}${st.isDirectory() ? " (700 keeps it to its owner)" : ""}`;
    return out;
  }
  for (let dir = dirname(real); ; dir = dirname(dir)) {
    let d: Stats;
    try {
      d = statSync(dir);
    } catch {
      break;
    }
    const sticky = (d.mode & 0o1000) !== 0;
    if (o.ownerMatters !== false && !trusted(d.uid)) {
      out.refused = `${dir}, a directory above ${what} ${path}, is owned by uid ${d.uid}, not by ${whoMayOwn()}: that user can replace what is in it; move ${what} elsewhere, or chown ${me()} ${dir}`;
      return out;
    }
    if (d.mode & 0o002 && !sticky) {
      out.refused = `${dir}, a directory above ${what} ${path}, has mode ${mode(d)}: anyone can replace what is in it; move ${what} elsewhere, or chmod o-w ${dir}`;
      return out;
    }
    if (d.mode & 0o020 && !sticky)
      out.warnings.push(
        `${dir}, a directory above ${what} ${path}, has mode ${mode(d)}: its group can replace what is in it; chmod g-w ${dir} unless that group is meant to`,
      );
    if (dirname(dir) === dir) break;
  }
  return out;
}
