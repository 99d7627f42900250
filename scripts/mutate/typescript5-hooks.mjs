// Module resolution hook for scripts/mutate/typescript5.mjs: `typescript` imported from
// inside @stryker-mutator/typescript-checker becomes `typescript5` (TypeScript 5, with the API).
export async function resolve(specifier, context, nextResolve) {
  if (specifier === "typescript" && context.parentURL?.includes("/@stryker-mutator/typescript-checker/"))
    return nextResolve("typescript5", context);
  return nextResolve(specifier, context);
}
