/** The gate step (docs/architecture.md §3): who is answered, control commands, visible refusals. */
export { Gate, type GateOptions } from "./gate.js";
export { SiblingCheck, type SiblingCheckOptions, type SiblingVerdict } from "./siblings.js";
export {
  decide,
  siblingMayChange,
  controlCommandOf,
  CONTROL_COMMANDS,
  type ControlCommand,
  type Decision,
  type DropReason,
  type GateContext,
  type Refusal,
} from "./decide.js";
export { DeniedReporter, DENIED_REACTION, type DeniedReporterOptions } from "./denied.js";
export {
  ControlExecutor,
  controlTargetOf,
  type ControlActions,
  type ControlOptions,
  type ControlOutcome,
  type ControlTarget,
} from "./control.js";
export { authorAllowed, channelPolicy, isDmLike, type ChannelInfo, type ChannelPolicy, type ChannelType } from "./policy.js";
