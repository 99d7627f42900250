/** The shape of one `buzz-bridge doctor` check, shared by doctor.ts and the checks it delegates to. */

/** ✓ passed, ✗ failed (exit 1), – not run because a check it needs failed. */
export type Mark = "ok" | "fail" | "skip";

export interface CheckResult {
  name: string;
  mark: Mark;
  /** One line: what was found, or what is wrong and what to do about it. */
  summary: string;
  /** Further lines (channel list, tool list, a stderr tail). */
  details?: string[];
}
