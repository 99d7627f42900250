// Preloaded by `npm run mutate` (node --import): Stryker's TypeScript checker needs the
// compiler's JavaScript API, which TypeScript 7 (this project's compiler, native) no longer
// ships. Stryker's own imports of `typescript` resolve to the `typescript5` package
// instead; everything else keeps TypeScript 7. Forked Stryker workers inherit the preload.
import { register } from "node:module";

register("./typescript5-hooks.mjs", import.meta.url);
