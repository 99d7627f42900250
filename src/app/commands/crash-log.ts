/**
 * A daemon that meets a bug it did not expect (an exception no code caught, a promise
 * rejected with no handler) says so in its own log before it exits: one `daemon.crashed`
 * line at fatal with the error's message and stack, then exit 2 (a runtime failure,
 * docs/operating.md). Without it Node prints a stack on stderr and exits 1, which reads as
 * a config error and leaves no `evt` for a log search. The process is not kept alive: its
 * state is unknown after such a bug. Accepted mentions are in the queue and run again after
 * the restart (systemd's `Restart=on-failure`), as after a kill.
 */
import type { Logger } from "../../base/log.js";
import { scrub } from "../../base/log.js";

/** Exit status of a crashed daemon: a runtime failure. */
export const CRASH_EXIT = 2;

/** Installs the handlers; returns a function that removes them. `exit` is the process's own but for tests. */
export function logCrashes(log: Logger, exit: (code: number) => void = (c) => process.exit(c)): () => void {
  let crashed = false;
  const onCrash = (kind: "exception" | "rejection") => (err: unknown) => {
    if (crashed) return;
    crashed = true;
    const e = err instanceof Error ? err : new Error(String(err));
    log.fatal(
      { evt: "daemon.crashed", kind, err: scrub(e.message), stack: scrub(e.stack ?? "") },
      `crashed on an error nothing handled (a bug: please report it with this line): ${scrub(e.message)}`,
    );
    // The log's destination is synchronous (base/log.ts): the line is written by now.
    exit(CRASH_EXIT);
  };
  const onException = onCrash("exception");
  const onRejection = onCrash("rejection");
  process.on("uncaughtException", onException);
  process.on("unhandledRejection", onRejection);
  return () => {
    process.off("uncaughtException", onException);
    process.off("unhandledRejection", onRejection);
  };
}
