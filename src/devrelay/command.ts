import { notImplemented } from "../ops/args.js";

export function main(_argv: string[]): Promise<number> {
  return notImplemented("dev-relay");
}
