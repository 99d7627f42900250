import { notImplemented } from "./args.js";

export function main(_argv: string[]): Promise<number> {
  return notImplemented("doctor");
}
