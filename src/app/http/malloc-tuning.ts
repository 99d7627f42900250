/**
 * glibc's allocator setting for the daemon (`buzz-bridge run`): allocations of 32 KiB and
 * more are mapped and unmapped on their own (`glibc.malloc.mmap_threshold=32768`), so
 * what they held goes back to the system when they are freed.
 *
 * By default glibc maps only blocks of 128 KiB and more, and raises that threshold to the
 * size of the largest mapped block freed so far, and its trim threshold to twice that. V8
 * compiles the signature checker's hot wasm functions (nostr-wasm's secp256k1) on its
 * worker threads with zones of several MiB; once such a zone is freed, blocks of up to
 * ~7 MiB come from the worker threads' malloc arenas instead, and what those arenas free is
 * kept rather than returned: an idle daemon held ~23 MiB of freed memory this way. With
 * the threshold at 128 KiB the arenas still kept ~10 MiB of blocks between 32 and 128 KiB
 * that start-up had freed, free but not at the top of an arena, so never trimmed; mapped
 * on their own, they are returned when freed. The price is a system call for each such
 * block: bench figure 6 reports the daemon's CPU with it, and figure 7 and
 * bench/README.md where the idle memory goes.
 *
 * glibc reads its tunables only when a process starts, so the daemon re-executes itself
 * once (`process.execve`: the same process id, argv and node flags) with the setting in
 * GLIBC_TUNABLES, and then puts GLIBC_TUNABLES back as it was, so agents and other
 * processes it starts inherit the environment it was given. Left as given when whoever
 * started the daemon set a `glibc.malloc.` tunable themselves; not done off Linux, or
 * where node has no `process.execve` (before Node 22.15). musl ignores GLIBC_TUNABLES.
 */

export const DAEMON_MALLOC_TUNABLE = "glibc.malloc.mmap_threshold=32768";

/** Set on the re-executed process: GLIBC_TUNABLES as the daemon was given it ("" for unset). */
export const GIVEN_TUNABLES_ENV = "BUZZ_BRIDGE_GIVEN_GLIBC_TUNABLES";

type Env = Record<string, string | undefined>;

/**
 * The environment to re-execute with, or undefined when the setting is in place or left
 * to the user (a `glibc.malloc.` tunable of their own, or this is the re-executed process).
 */
export function mallocReexecEnv(env: Env, platform: string = process.platform): Env | undefined {
  if (platform !== "linux" || env[GIVEN_TUNABLES_ENV] !== undefined) return undefined;
  const given = env.GLIBC_TUNABLES ?? "";
  if (/(^|:)glibc\.malloc\./.test(given)) return undefined;
  return { ...env, GLIBC_TUNABLES: given ? `${given}:${DAEMON_MALLOC_TUNABLE}` : DAEMON_MALLOC_TUNABLE, [GIVEN_TUNABLES_ENV]: given };
}

/** In the re-executed process: GLIBC_TUNABLES back as given (glibc has read it), the marker gone. */
export function restoreGivenTunables(env: Env): void {
  const given = env[GIVEN_TUNABLES_ENV];
  if (given === undefined) return;
  if (given) env.GLIBC_TUNABLES = given;
  else delete env.GLIBC_TUNABLES;
  delete env[GIVEN_TUNABLES_ENV];
}

/**
 * Re-executes the daemon with the setting when it is not in place yet (this call then does
 * not return); otherwise restores the environment. A node that cannot re-execute (no
 * `process.execve`, or it fails) carries on unchanged.
 */
export function applyDaemonMallocTuning(): void {
  const next = mallocReexecEnv(process.env);
  const execve = (process as { execve?: (file: string, args: string[], env: Env) => never }).execve;
  if (next && typeof execve === "function") {
    try {
      execve.call(process, process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], next);
    } catch {
      return; // runs with glibc's defaults
    }
  }
  restoreGivenTunables(process.env);
}
