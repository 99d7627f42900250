# syntax=docker/dockerfile:1
#
# buzz-bridge in a container: one YAML file mounted at /etc/buzz-bridge/, state in a volume.
#
#   docker build -t buzz-bridge .
#   docker run -d --name buzz-bridge --init --stop-timeout 45 \
#     --env-file /etc/buzz-bridge/env \
#     -v /etc/buzz-bridge:/etc/buzz-bridge:ro -v buzz-bridge-state:/var/lib/buzz-bridge \
#     -p 127.0.0.1:9464:9464 buzz-bridge
#
# - The agent's key reaches the container user (uid 10001) in one of two ways:
#   * in the environment: /etc/buzz-bridge/env on the host (root-owned, 0600; docker reads it
#     as root) holds BUZZ_PRIVATE_KEY=nsec1… (and the agent's ANTHROPIC_API_KEY=…), and the
#     config says `secret_key: ${BUZZ_PRIVATE_KEY}`;
#   * as a file owned by that uid: `buzz-bridge keygen --out /etc/buzz-bridge/agent.nsec
#     --owner 10001:10001` on the host, and the config says `secret_key_file: agent.nsec`.
#   The daemon refuses a key file that group or others can read, so 0640 does not work.
# - State: the image sets STATE_DIRECTORY to the volume, the default state_dir (relative
#   paths in the config are relative to the config file's directory, which is read-only).
# - `--init` (tini as PID 1) reaps the agents' orphaned grandchildren (shells, git, ...);
#   Node as PID 1 would leave them as zombies.
# - `--stop-timeout 45` (compose: `stop_grace_period: 45s`): Docker's default 10 s is below
#   the daemon's 30 s shutdown grace for turns in flight.
# - Set `http: { listen: "0.0.0.0:9464" }` in the config for the published port and the
#   HEALTHCHECK; a different port needs BUZZ_BRIDGE_HEALTH_URL set to match.
# - The agent (e.g. claude-agent-acp) is not in this image: build FROM it and add yours.
# - The agent sandbox (agent.sandbox: auto, the default) runs each agent in bubblewrap,
#   installed here. Docker's defaults refuse it the user namespace (seccomp), the mounts
#   (AppArmor) and a /proc of its own (masked /proc paths), so add
#     --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined
#   (compose: security_opt). Without them agents run unsandboxed, with one warning at start
#   and in `doctor`; agent.sandbox: bubblewrap makes that a start-up error instead. The host
#   kernel must allow unprivileged user namespaces (user.max_user_namespaces > 0).
# - Sandboxed agents get a network of their own (slirp4netns, installed here), so they do not
#   reach services on the container's loopback (the daemon's /status and /metrics); it needs
#   the tun device: add `--device /dev/net/tun` (compose: devices).
#
# test/ops-dockerfile.test.ts runs this recipe's build and start steps outside a container,
# and test/ops-unprivileged.test.ts starts the daemon as this image's user with its ENV.

# Node 24, the active LTS line (maintained until 2028-04-30), on which CI runs the suite;
# package.json's engines says >=22.13.
ARG NODE_VERSION=24

# ---- build: dev dependencies, the build, and the package `npm pack` makes of it ----
# The image holds what the release package holds (package.json's "files"), with the
# production dependencies of the lockfile: the same package `npm install -g` installs.
# No toolchain: no dependency builds a native module (SQLite is Node's own node:sqlite).
FROM node:${NODE_VERSION}-bookworm AS build
WORKDIR /app
# Lockfile first, so the dependency layer is cached across source edits.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json README.md CHANGELOG.md ./
COPY src ./src
COPY config ./config
RUN npm run build && npm prune --omit=dev --no-audit --no-fund \
 && npm pack --silent && mkdir release \
 && tar -xzf buzz-bridge-*.tgz -C release --strip-components=1 \
 && mv node_modules release/

# ---- run: slim Node, production dependencies only, non-root ----
FROM node:${NODE_VERSION}-bookworm-slim AS run
ENV NODE_ENV=production \
    BUZZ_BRIDGE_CONFIG=/etc/buzz-bridge/buzz-bridge.yaml \
    BUZZ_BRIDGE_HEALTH_URL=http://127.0.0.1:9464/healthz
# A fixed numeric UID/GID (not the image's `node` user, 1000) so volume ownership is
# predictable and runtimes can verify runAsNonRoot.
RUN groupadd --system --gid 10001 buzz-bridge \
 && useradd --system --uid 10001 --gid buzz-bridge --home-dir /var/lib/buzz-bridge \
      --shell /usr/sbin/nologin buzz-bridge \
 && install -d -o buzz-bridge -g buzz-bridge -m 0750 /var/lib/buzz-bridge /srv/agents \
 && install -d -m 0755 /etc/buzz-bridge
# bubblewrap and slirp4netns: the agent sandbox and its network (see above).
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap slirp4netns \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Application files stay root-owned: the service user can read but not rewrite them.
COPY --from=build /app/release/package.json ./package.json
COPY --from=build /app/release/node_modules ./node_modules
COPY --from=build /app/release/dist ./dist
COPY --from=build /app/release/config ./config
USER 10001:10001
# The volume is the default state_dir (STATE_DIRECTORY, as systemd's StateDirectory= sets it);
# agents' work dirs default to work/{channel} inside it, and HOME keeps their caches there too.
ENV HOME=/var/lib/buzz-bridge \
    STATE_DIRECTORY=/var/lib/buzz-bridge
WORKDIR /var/lib/buzz-bridge
VOLUME /var/lib/buzz-bridge
EXPOSE 9464
# node, not curl: the slim image has no curl. Liveness only (/healthz), not /readyz: a relay
# outage should not get the container killed while it reconnects.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.BUZZ_BRIDGE_HEALTH_URL,{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/dist/cli.js"]
CMD ["run"]
