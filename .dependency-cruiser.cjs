/**
 * The import check run by `npm test` (`npm run deps`): the layers of docs/architecture.md §2
 * only point down, and no module imports itself round a cycle.
 *
 * LAYERS lists the folders of src/ from the floor up. A folder may import its own files and
 * folders of layers below its own, never a folder of its own layer or above: `proxy/` may use
 * `link/`, never the other way. Moving a folder, or adding one, is a change of this list and
 * of the table in docs/architecture.md §2.
 *
 * TypeScript is read with swc (`@swc/core`): the project compiles with TypeScript 7, whose
 * compiler has no JavaScript API for dependency-cruiser to call. Type-only imports count:
 * a layer that needs a type from above leans on it as much as one that needs a value.
 */
const LAYERS = [
  ["base"], // logging, argv, backoff, small shared helpers: imports nothing of the project
  ["presets"], // the agent presets: launch data per agent, no I/O but writing their settings files
  ["config"], // the config schema, loading, keys
  ["contract"], // what crosses the daemon↔proxy link
  ["nostr"], // the NIP and Buzz vocabulary: kinds, event builders and checks, signatures
  ["relay"], // the relay client stack: WebSocket, NIP-42, publishing, quotas, NIP-98 HTTP
  ["buzz"], // Buzz services on the client: channel directory, profiles, presence, tail
  ["agent", "queue", "gate", "prompt", "link"], // the steps of a mention's path
  ["proxy"], // the MCP proxy (uses link/'s client)
  ["turn"], // a turn: joins agent, queue, prompt and link
  ["intake"], // the front door: relay event → gate → queue, owner commands, amendments
  ["devrelay", "demo"], // programs of their own on the layers below
  ["app"], // the top: the daemon's wiring, doctor, the HTTP surface, every subcommand
];

/**
 * app/'s rooms, from the floor up, by the same rule: a room imports rooms below it only.
 * The HTTP surface knows nothing of the daemon; the daemon's wiring knows nothing of doctor;
 * the commands sit on top. doctor may use the daemon room's state lock and preflight wording,
 * never the daemon itself (doctor-not-daemon below).
 */
const APP_ROOMS = ["http", "daemon", "doctor", "commands"];

const upward = LAYERS.flatMap((layer, i) =>
  layer.map((folder) => {
    const notAllowed = LAYERS.slice(i).flat().filter((f) => f !== folder);
    return {
      name: `layer-${folder}`,
      comment: `src/${folder}/ may import only folders below its layer (docs/architecture.md §2); not ${notAllowed.join(", ")}`,
      severity: "error",
      from: { path: `^src/${folder}/` },
      to: { path: `^src/(${notAllowed.join("|")})/` },
    };
  }),
);

const appUpward = APP_ROOMS.slice(0, -1).map((room, i) => {
  const above = APP_ROOMS.slice(i + 1);
  return {
    name: `app-room-${room}`,
    comment: `src/app/${room}/ may import only app rooms below it (docs/architecture.md §2); not ${above.join(", ")}`,
    severity: "error",
    from: { path: `^src/app/${room}/` },
    to: { path: `^src/app/(${above.join("|")})/` },
  };
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "an import cycle: the modules cannot be read or loaded one after the other",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...upward,
    ...appUpward,
    {
      name: "doctor-not-daemon",
      comment: "doctor starts the parts run would, never the daemon itself (docs/architecture.md §2)",
      severity: "error",
      from: { path: "^src/app/doctor/" },
      to: { path: "^src/app/daemon/daemon\\.ts$" },
    },
    {
      name: "app-in-rooms",
      comment: `every file of src/app/ lives in one of its rooms: ${APP_ROOMS.join(", ")}`,
      severity: "error",
      from: { path: "^src/app/", pathNot: `^src/app/(${APP_ROOMS.join("|")})/` },
      to: {},
    },
    {
      name: "cli-is-the-roof",
      comment: "src/cli.ts is the entry point; nothing imports it",
      severity: "error",
      from: {},
      to: { path: "^src/cli\\.ts$" },
    },
    {
      name: "src-not-tests",
      comment: "shipped code never imports test or bench code",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(test|bench|scripts)/" },
    },
    {
      name: "src-not-dev-deps",
      comment: "shipped code imports only dependencies, never devDependencies (they are not installed with the package)",
      severity: "error",
      from: { path: "^src/" },
      to: { dependencyTypes: ["npm-dev"] },
    },
    {
      name: "src-in-layers",
      comment: "every folder of src/ has a place in LAYERS (.dependency-cruiser.cjs, docs/architecture.md §2)",
      severity: "error",
      from: { path: "^src/", pathNot: [`^src/(${LAYERS.flat().join("|")})/`, "^src/cli\\.ts$"] },
      to: {},
    },
  ],
  options: {
    parser: "swc",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
