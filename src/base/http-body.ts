/**
 * The one reader of a whole HTTP body — a request a server got, or an answer the daemon's
 * requests got (http-request.ts, media-fetch.ts) — bounded in size: a body whose Content-Length announces more than the limit is refused
 * before a byte is read, and one that turns out longer as it arrives is refused at the
 * chunk that passes the limit, never held whole.
 */
import type { IncomingMessage } from "node:http";

/** A body past its limit: announced so by its Content-Length, or found so as it arrived. */
export class BodyTooLargeError extends Error {
  constructor(
    readonly limit: number,
    /** The Content-Length that announced it; undefined when the bytes themselves passed the limit. */
    readonly announced?: number,
  ) {
    super(
      announced === undefined
        ? `the body is larger than the ${limit} bytes allowed`
        : `the body is announced as ${announced} bytes, more than the ${limit} allowed`,
    );
    this.name = "BodyTooLargeError";
  }
}

export interface ReadBodyOptions {
  /**
   * What becomes of the rest of a body too large. `destroy` (the default) drops the
   * connection, so no more of it is received; `drain` reads the rest off and throws it
   * away, so a server can still answer (a 413) on the connection.
   */
  rest?: "destroy" | "drain";
}

/**
 * The whole body, at most `maxBytes`: BodyTooLargeError past it. The stream's own errors
 * (a connection reset, a premature close, a `destroy(err)` by the caller's deadline) reject
 * as they are.
 */
export async function readBody(msg: IncomingMessage, maxBytes: number, o: ReadBodyOptions = {}): Promise<Buffer> {
  const refuse = (err: BodyTooLargeError): BodyTooLargeError => {
    if (o.rest === "drain") msg.resume();
    else msg.destroy();
    return err;
  };
  const announced = Number(msg.headers["content-length"]);
  if (Number.isFinite(announced) && announced > maxBytes) throw refuse(new BodyTooLargeError(maxBytes, announced));
  const chunks: Buffer[] = [];
  let size = 0;
  // Not destroyed on leaving the loop early: `rest` says what becomes of it.
  for await (const chunk of msg.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw refuse(new BodyTooLargeError(maxBytes));
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}
