/**
 * Headlines for log events logged without a message of their own, so every line has a
 * `msg` and pretty logs never show a blank headline. The logger adds the headline when a
 * call passes only the fields; a call's own message always wins. An `evt` missing here
 * gets its own name as the headline.
 */
export const HEADLINES: Readonly<Record<string, string>> = {
  "agent.kill_after_grace": "the agent did not exit in time; killed",
  "gate.control": "owner command handled",
  "gate.control_publish_failed": "could not publish an owner command's outcome",
  "gate.control_replayed": "owner command already handled before; not run again",
  "gate.denied_notify_failed": "could not tell the author the mention was denied",
  "gate.down": "a stop: wait gate is not running",
  "gate.workflow_wake": "a workflow of the owner woke the agent (signed by the relay's key)",
  hook: "hook fan-out finished",
  "instance.beacon_failed": "could not announce this daemon on the relay",
  "instance.conflict": "another daemon of this identity is running",
  "link.connected": "a session's proxy connected",
  "link.relay_back": "a buzz tool call stopped waiting for the relay",
  "link.relay_wait": "a buzz tool call waits for the relay to come back",
  "link.disconnected": "a session's proxy disconnected",
  "link.listening": "proxy link socket listening",
  "link.refused": "refused a proxy link connection",
  "link.tool_failed": "a buzz tool call through the link failed",
  "mcp.http_connected": "an agent opened an MCP session on its HTTP endpoint",
  "mcp.http_error": "the MCP HTTP endpoint failed to serve a request",
  "mcp.http_refused": "refused a request to an MCP HTTP endpoint",
  "prompt.history_failed": "could not fetch thread history for the prompt",
  "proxy.hook_name_invalid": "an MCP server's hook has an invalid name; ignored",
  "proxy.link_closed": "the link to the daemon closed",
  "proxy.link_failed": "could not connect to the daemon's link",
  "proxy.list_changed": "an MCP server's tool list changed",
  "proxy.list_failed": "an MCP server failed to list its tools",
  "proxy.list_timeout": "an MCP server did not list its tools in time",
  "proxy.name_collision": "two MCP servers offer the same tool name",
  "proxy.server_down": "an MCP server is down",
  "proxy.server_error": "an MCP server reported an error",
  "proxy.server_failed": "an MCP server failed to start",
  "proxy.server_restart": "restarting an MCP server",
  "proxy.start": "proxy started",
  "proxy.stop": "proxy stopping",
  "proxy.too_many_tools": "more tools than one session can list; some dropped",
  "proxy.tool_renamed": "a tool was renamed to fit the naming rules",
  "proxy.upstream_error": "error on the agent side of the proxy",
  "question.answer_ignored": "an answer to the agent's question came from someone who may not answer it; ignored",
  "question.answered": "the agent's question was answered (or closed unanswered)",
  "question.asked": "the agent asked a question in the thread",
  "queue.cancelled": "queued and running work cancelled",
  "relay.nip11_problem": "the relay's NIP-11 document is missing, malformed or untrue; defaults used",
  "relay.rotated": "replaced the relay connection before its lifetime ended",
  "relay.self_changed": "the relay announces a new signing key (NIP-11 self)",
  "relay.successor_failed": "a second relay socket could not be subscribed in time; reconnecting at a quiet moment",
  "queue.fleet_leave_failed": "could not hand this daemon's leases back to the fleet on shutdown",
  "queue.fleet_pass_failed": "a pass over the fleet's shared queue failed; the next one retries",
  "queue.recovered": "re-queued work accepted before the restart",
  "queue.refusal_notice_failed": "could not post the notice for refused events",
  "queue.refused": "refused an event: too far behind",
  "queue.scope_lost": "this daemon lost a scope's lease to another daemon of the fleet",
  "queue.store_write_failed": "could not write a turn's state to the state database",
  "queue.store_write_retry": "the state database is unreachable; retrying a turn's write",
  "queue.turn_resumed": "took over a turn another daemon left running",
  "queue.turn_failed": "turn failed for good; the thread gets a notice",
  "queue.turn_retry": "turn failed; retrying after a backoff",
};

/** The headline for a fields-only call: the table's, else the event name itself. */
export function headlineFor(evt: string): string {
  return HEADLINES[evt] ?? evt;
}
