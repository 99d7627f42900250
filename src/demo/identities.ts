/**
 * The demo's people. These keys are published on purpose (they only exist on the
 * embedded development relay of `buzz-bridge demo`); config/demo.yaml and
 * config/demo-seed.yaml name the same public keys.
 */
export const DEMO_USERS = {
  agent: { name: "agent", nsec: "nsec1kzejalcwv29m6rafsx2dwp0jq9sylqqmvuxwt2aallzk7vur3gnsdcuqlk" },
  alice: { name: "alice (owner)", nsec: "nsec1dmv2qqh45azl5agyusw4dp8apyt3jpu0uzpac2g53tsdsdks6ftqcttt6q" },
  bob: { name: "bob (teammate)", nsec: "nsec12wf9vs7m9cq9vpdwhl39taq6rcx0mxw72js7wzqnn8q28uh85g0q9980xq" },
  mallory: { name: "mallory (stranger)", nsec: "nsec1p2wdsdjwrng9yhu4w2qmkh8psdz4axhmcz9ntcc35p5pppdlrs5sweplwx" },
} as const;

export const DEMO_CHANNEL = "7c1d3e5a-2b4f-4a6e-9c8d-0e1f2a3b4c5d";
