/**
 * One HTTP(S) request and its whole answer, bounded in time and size — the daemon's one HTTP
 * client (the relay's NIP-11 document and its NIP-98 API, media uploads, `doctor`'s provider
 * check; attachment downloads keep their own guarded requests, buzz/media-fetch.ts).
 *
 * Over `node:http` rather than `fetch`: Node's `fetch` (undici) compiles its HTTP parser to
 * WebAssembly on first use, and that one small GET at start held ~15 MiB more of an idle
 * daemon for good (docs/architecture.md §2, bench/README.md figure 7).
 */
import { request as plainRequest, type IncomingHttpHeaders } from "node:http";
import { request as tlsRequest } from "node:https";
import { BodyTooLargeError, readBody } from "./http-body.js";

export interface HttpRequestOptions {
  /** Default GET. */
  method?: string;
  headers?: Record<string, string>;
  body?: Uint8Array | string;
  /** For the whole exchange, the answer's last byte included; past it: a `TimeoutError`. */
  timeoutMs: number;
  /** The most of an answer read: `AnswerTooLargeError` past it (a `BodyTooLargeError`), the connection dropped. */
  maxBytes: number;
}

export interface HttpAnswer {
  status: number;
  /** 2xx. */
  ok: boolean;
  headers: IncomingHttpHeaders;
  text: string;
}

/** Thrown when `timeoutMs` passed first (`name` is "TimeoutError", as `AbortSignal.timeout`'s). */
export class HttpTimeoutError extends Error {
  override name = "TimeoutError";
  constructor(url: string, ms: number) {
    super(`no whole answer from ${url} within ${ms} ms`);
  }
}

/** An answer past `maxBytes` (the body reader's refusal), with the status it came with. */
export class AnswerTooLargeError extends BodyTooLargeError {
  constructor(
    readonly status: number,
    refused: BodyTooLargeError,
  ) {
    super(refused.limit, refused.announced);
  }
}

/**
 * Sends the request and reads the whole answer as UTF-8 text. A failure to connect rejects
 * with Node's own error (its `code`: ECONNREFUSED, ENOTFOUND, a TLS code), a redirect is not
 * followed (its 3xx is the answer).
 */
export function httpRequest(url: string, o: HttpRequestOptions): Promise<HttpAnswer> {
  const target = new URL(url);
  const send = target.protocol === "https:" ? tlsRequest : plainRequest;
  return new Promise<HttpAnswer>((resolve, reject) => {
    const req = send(target, { method: o.method ?? "GET", headers: o.headers });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      req.destroy(new HttpTimeoutError(url, o.timeoutMs));
    }, o.timeoutMs);
    // Past the deadline the stream's error is whatever the cut left ("aborted"): the deadline is the reason.
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(timedOut ? new HttpTimeoutError(url, o.timeoutMs) : err);
    };
    req.once("error", fail);
    req.once("response", (res) => {
      // The response's errors (a reset, the deadline's destroy) reach readBody through the stream.
      res.once("error", () => undefined);
      const status = res.statusCode ?? 0;
      readBody(res, o.maxBytes).then(
        (buf) => {
          clearTimeout(timer);
          resolve({ status, ok: status >= 200 && status < 300, headers: res.headers, text: buf.toString("utf8") });
        },
        (err: Error) => fail(err instanceof BodyTooLargeError ? new AnswerTooLargeError(status, err) : err),
      );
    });
    req.end(o.body);
  });
}
