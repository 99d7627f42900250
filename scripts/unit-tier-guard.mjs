// Loaded into every test process (scripts/run-tests.mjs). A file of the in-process tier
// (test/unit/) may not start a process: there child_process refuses, naming the rule, so a
// test that needs a daemon, an agent or a server is moved to test/, the process tier, rather
// than slowing the tier meant to answer in a minute (docs/testing.md).
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import { sep } from "node:path";

// The runner says which tier a process serves (BUZZ_TEST_TIER=unit: its shares run many unit
// files in one process); a unit file run alone is known by its path.
const file = process.argv[1] ?? "";
if (process.env.BUZZ_TEST_TIER === "unit" || file.includes(`${sep}test${sep}unit${sep}`)) {
  for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
    childProcess[name] = () => {
      throw new Error(`${name}: test/unit/ is the in-process tier and starts no process; move this test to test/ (docs/testing.md)`);
    };
  }
  syncBuiltinESMExports();
}
