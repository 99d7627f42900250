/**
 * `buzz-bridge mcp-proxy [--manifest FILE]`: the aggregating MCP proxy on stdio.
 * Under the daemon, BUZZ_BRIDGE_LINK / BUZZ_BRIDGE_LINK_TOKEN say where to fetch the
 * manifest and where buzz tools go; by hand, --manifest names a YAML file shaped like
 * the config's `mcp` section. stdout is the MCP stream: every log line goes to stderr.
 */
import { createLogger, PROXY_LOGGER_NAME } from "../../base/log.js";
import { parseCommandArgs, UsageError, withUsage } from "../../base/args.js";
import { LinkClient } from "../../link/client.js";
import { LINK_ENV, LINK_TOKEN_ENV } from "../../contract/proxy-entry.js";
import { StreamTransport } from "../../base/line-transport.js";
import {
  DEFAULT_HOOK_DEADLINE_MS,
  DEFAULT_LIST_TIMEOUT_MS,
  loadManifestFile,
  ManifestError,
  type ProxyManifest,
} from "../../proxy/manifest.js";
import { AggregatingProxy } from "../../proxy/server.js";

/** How long a closed link may precede the proxy's own stop before it counts as lost. */
const LINK_CLOSE_GRACE_MS = 3000;

const HELP = `usage: buzz-bridge mcp-proxy [--manifest FILE]

The aggregating MCP proxy on stdio: starts the session's MCP servers and presents
them as one (hooks merged, buzz tools built in when started by the daemon).

  --manifest FILE   YAML like the config's mcp section (servers, hook_deadline, list_timeout)
  --log-level LVL   fatal|error|warn|info|debug (default info; logs go to stderr)
`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { manifest: { type: "string" }, "log-level": { type: "string" } }, HELP);
    if (!args) return 0;
    const logger = createLogger({
      destination: process.stderr,
      level: (args.values["log-level"] as string | undefined) ?? "info",
      name: PROXY_LOGGER_NAME,
    });
    const file = args.values.manifest as string | undefined;
    const socketPath = process.env[LINK_ENV];
    const token = process.env[LINK_TOKEN_ENV];
    // The token is ours alone: downstream servers never see it (env.ts drops it too).
    delete process.env[LINK_TOKEN_ENV];

    let manifest: ProxyManifest = { servers: [], hook_deadline: DEFAULT_HOOK_DEADLINE_MS, list_timeout: DEFAULT_LIST_TIMEOUT_MS };
    let link: LinkClient | undefined;
    if (socketPath && token) {
      try {
        link = await LinkClient.connect(socketPath, token);
      } catch (err) {
        logger.error({ evt: "proxy.link_failed", error: (err as Error).message });
        // Without the daemon we cannot know our servers, unless a manifest file was given.
        if (!file) return 2;
      }
      if (link) manifest = link.manifest;
    }
    if (file) {
      try {
        const fromFile = loadManifestFile(file);
        if (!link) manifest = fromFile;
      } catch (err) {
        if (err instanceof ManifestError) throw new UsageError(err.message);
        throw err;
      }
    }
    if (!link && !file) logger.warn({ evt: "proxy.no_servers", msg: "no link and no --manifest: serving no tools" });

    const proxy = new AggregatingProxy({ manifest, logger, link });
    const transport = new StreamTransport();
    let stopping: Promise<void> | undefined;
    const stop = (why: string) => {
      stopping ??= (async () => {
        logger.info({ evt: "proxy.stop", reason: why });
        await proxy.stop();
        link?.close();
      })();
      return stopping;
    };
    const done = new Promise<void>((resolve) => {
      transport.onclose = () => void stop("stdin closed").then(resolve);
      process.once("SIGTERM", () => void stop("SIGTERM").then(resolve));
      process.once("SIGINT", () => void stop("SIGINT").then(resolve));
    });
    // Closing is expected while the proxy stops: the daemon ends a session's link as it
    // shuts down, and the agent closes the proxy's stdin a moment later. Only a link still
    // gone while the proxy keeps serving is worth a warning.
    link?.onClose(() => {
      if (stopping) return void logger.debug({ evt: "proxy.link_closed" }, "link to the daemon closed while stopping");
      setTimeout(() => {
        if (!stopping) logger.warn({ evt: "proxy.link_closed" }, "the link to the daemon closed; buzz tools are unavailable");
      }, LINK_CLOSE_GRACE_MS).unref();
    });
    logger.info({ evt: "proxy.start", servers: manifest.servers.map((s) => s.name), link: Boolean(link) });
    await proxy.start(transport);
    await done;
    // Stray handles (a half-closed link, a child's pipe) must not keep a finished proxy alive.
    setTimeout(() => process.exit(0), 200);
    return 0;
  });
}
