// Module resolution hook for scripts/mutate/typescript5.mjs: `typescript` imported from
// inside Stryker (its TypeScript checker, and core's tsconfig rewriting) becomes `typescript5`
// (TypeScript 5, with the compiler API).
export async function resolve(specifier, context, nextResolve) {
  if (specifier === "typescript" && context.parentURL?.includes("/node_modules/@stryker-mutator/"))
    return nextResolve("typescript5", context);
  return nextResolve(specifier, context);
}
