/**
 * Rate-limited logging for input a hostile or broken relay controls: one bad frame is worth a
 * line, ten thousand are not worth ten thousand lines.
 */
import type { Logger } from "../ops/log.js";

export class LogThrottle {
  private windows = new Map<string, { start: number; count: number }>();

  /**
   * @param perWindow lines per key per window. Default 5: enough to see the pattern.
   * @param windowMs window length. Default 60 s.
   */
  constructor(private readonly logger: Logger, private readonly perWindow = 5, private readonly windowMs = 60_000) {}

  warn(key: string, obj: Record<string, unknown>, msg: string): void {
    const now = Date.now();
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      const suppressed = w ? w.count - this.perWindow : 0;
      w = { start: now, count: 0 };
      this.windows.set(key, w);
      if (suppressed > 0) this.logger.warn({ evt: "relay.log_suppressed", key, suppressed }, `${suppressed} similar lines were suppressed`);
    }
    w.count++;
    if (w.count <= this.perWindow) this.logger.warn({ evt: key, ...obj }, msg);
  }
}
