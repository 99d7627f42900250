/**
 * The daemon's V8 young generation, kept at its starting size (two 1 MiB semi-spaces).
 *
 * V8 doubles the young generation whenever enough objects survive a scavenge, up to two
 * 16 MiB semi-spaces, and never gives the room back. The daemon's start-up (loading its
 * modules, joining hundreds of channels) is exactly such a burst, so an idle daemon kept
 * 32 MiB of young generation it no longer used: the largest single part of its idle RSS
 * (README, Performance, figure 7). A growth factor of 1 has the effect of
 * `--max-semi-space-size=1`, but unlike that flag it can still be set from inside the
 * process (V8 reads it at each growth step), so it applies however the daemon is started:
 * the `buzz-bridge` bin, `node dist/cli.js run` in the systemd unit or the container, with
 * no wrapper process and no NODE_OPTIONS to leak into agents. The price is more frequent
 * scavenges under load (bench figure 6 reports the daemon's CPU with it).
 */
import { setFlagsFromString } from "node:v8";

/** The flag, in the form `node` takes it. */
export const YOUNG_GENERATION_FLAG = "--semi-space-growth-factor=1";

/**
 * True when whoever started node sized the young generation themselves (`--max-semi-space-size`,
 * `--min-semi-space-size` or a growth factor, on the command line or in NODE_OPTIONS): their
 * choice wins, e.g. to trade memory for CPU on a very busy bridge.
 */
export function youngGenerationChosen(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? "").split(/\s+/)].some((a) => /^--(max|min)[-_]semi[-_]space[-_]size\b|^--semi[-_]space[-_]growth[-_]factor\b/.test(a));
}

/** Applies the growth factor unless the young generation was sized explicitly; true when applied. */
export function keepYoungGenerationSmall(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS): boolean {
  if (youngGenerationChosen(execArgv, nodeOptions)) return false;
  setFlagsFromString(YOUNG_GENERATION_FLAG);
  return true;
}
