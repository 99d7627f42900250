/**
 * Rate-limited logging for input someone else controls (a hostile or broken relay, forged
 * events): one bad frame is worth a line, ten thousand are not worth ten thousand lines.
 * What a window holds back is still accounted for: when the window ends, one line says
 * how many lines of that key were suppressed.
 */
import type { Level as PinoLevel } from "pino";
import type { Logger } from "./log.js";

export interface LogThrottleOptions {
  /** Lines per key per window. Default 5: enough to see the pattern. */
  perWindow?: number;
  /** Window length in ms. Default 60 s. */
  windowMs?: number;
  /** `evt` of the line that counts a window's suppressed lines. Default "log.suppressed". */
  summaryEvt?: string;
}

type Level = PinoLevel;

interface Window {
  count: number;
  level: Level;
  timer: NodeJS.Timeout;
}

export class LogThrottle {
  private readonly windows = new Map<string, Window>();
  private readonly perWindow: number;
  private readonly windowMs: number;
  private readonly summaryEvt: string;

  constructor(
    private readonly logger: Logger,
    opts: LogThrottleOptions = {},
  ) {
    this.perWindow = opts.perWindow ?? 5;
    this.windowMs = opts.windowMs ?? 60_000;
    this.summaryEvt = opts.summaryEvt ?? "log.suppressed";
  }

  /** Logs `line` unless `key` already had its share of this window. */
  log(level: Level, key: string, line: Record<string, unknown>, msg?: string): void {
    let w = this.windows.get(key);
    if (!w) {
      // The window starts with its first line and ends on a timer, so the count of what
      // it suppressed is written even when the flood stops.
      w = { count: 0, level, timer: setTimeout(() => this.close(key), this.windowMs) };
      w.timer.unref();
      this.windows.set(key, w);
    }
    w.count++;
    if (w.count <= this.perWindow) this.logger[level](line, msg);
  }

  /** The relay's own convention: the key is the line's `evt`, at warn. */
  warn(key: string, obj: Record<string, unknown>, msg: string): void {
    this.log("warn", key, { evt: key, ...obj }, msg);
  }

  private close(key: string): void {
    const w = this.windows.get(key);
    this.windows.delete(key);
    const suppressed = w ? w.count - this.perWindow : 0;
    if (w && suppressed > 0) {
      this.logger[w.level](
        { evt: this.summaryEvt, key, suppressed, window_ms: this.windowMs },
        `${suppressed} similar lines were suppressed`,
      );
    }
  }
}
