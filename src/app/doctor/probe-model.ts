/**
 * `doctor`'s probe model: a model API on 127.0.0.1 that answers every request with a short
 * text, in the API the agent speaks (./model-wire.ts), and keeps what each request offered:
 * the tools as the agent shows them to its model.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readJsonBody, readRequest, wireOf, writeAnswer, type WireRequest } from "./model-wire.js";

export interface ProbeModel {
  /** `http://127.0.0.1:PORT/v1`: every preset's base-URL setting reaches its API's paths under it. */
  url: string;
  requests: WireRequest[];
  close(): Promise<void>;
}

export async function startProbeModel(): Promise<ProbeModel> {
  const requests: WireRequest[] = [];
  let n = 0;
  const server = createServer((req, res) => {
    const route = wireOf(req.method, req.url);
    void readJsonBody(req).then(
      (body) => {
        if (!route) {
          // Token counting and the like: an answer every agent seen accepts.
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ input_tokens: 1, totalTokens: 1 }));
          return;
        }
        const r = readRequest(route, body);
        requests.push(r);
        writeAnswer(res, r, { text: "The probe model answers: ok.", usage: { input: 1, output: 1 } }, `probe_${++n}`);
      },
      (err: Error) => {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: err.message } }));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
