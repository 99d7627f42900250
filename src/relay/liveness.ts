/**
 * WebSocket ping/pong liveness (docs/protocol.md §1: the harness pings every 30 s and treats a
 * pong missing for 10 s as a dead link). A half-open TCP connection never closes by itself;
 * this is what notices it.
 */
import WebSocket from "ws";

/** Pings `ws` every `intervalMs`; calls `onDead` once when a pong is `timeoutMs` late. Returns a stop function. */
export function watchLiveness(ws: WebSocket, intervalMs: number, timeoutMs: number, onDead: () => void): () => void {
  let deadline: NodeJS.Timeout | undefined;
  const onPong = () => {
    clearTimeout(deadline);
    deadline = undefined;
  };
  ws.on("pong", onPong);
  const tick = setInterval(() => {
    if (ws.readyState !== WebSocket.OPEN) return stop();
    if (deadline) return; // the previous ping's deadline is still running
    deadline = setTimeout(() => {
      stop();
      onDead();
    }, timeoutMs);
    ws.ping();
  }, intervalMs);
  function stop() {
    clearInterval(tick);
    clearTimeout(deadline);
    ws.off("pong", onPong);
  }
  return stop;
}
