/** The gate step (docs/architecture.md §3): who is answered, control commands, visible refusals. */
export { Gate } from "./gate.js";
export { SiblingCheck } from "./siblings.js";
export type { Decision, GateContext } from "./decide.js";
export { DeniedReporter } from "./denied.js";
export { ControlExecutor } from "./control.js";
