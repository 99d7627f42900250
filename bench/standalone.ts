/**
 * Each bench part also runs on its own (`node --import tsx bench/proxy.ts`): when its file is
 * the entry point, the part runs once, prints its raw figures and the process exits — without
 * waiting for a stray timer of a closed part, as `npm run bench` does too.
 */
import { fileURLToPath } from "node:url";

export function runIfMain<T>(
  moduleUrl: string,
  part: () => Promise<T>,
  print: (r: T) => void = (r) => console.log(JSON.stringify(r, null, 2)),
): void {
  if (!process.argv[1] || fileURLToPath(moduleUrl) !== process.argv[1]) return;
  part().then(
    (r) => {
      print(r);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
