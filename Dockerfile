# syntax=docker/dockerfile:1
# One image for all six services. Node 24 runs the TypeScript sources directly (type stripping),
# so there is no build step: the image is the workspace's production install. Each service is
# one entry command, which the Helm chart sets per Deployment:
#   node services/<name>/src/main.ts           run the service
#   node services/<name>/src/main.ts migrate   apply its migrations and exit
# Workspace packages stay at /app/packages/* (linked from node_modules/@th/*): Node refuses to
# strip types of files whose real path lies under node_modules, which rules out `pnpm deploy`.
# test/deploy-image.test.ts repeats the install below from the same COPY list and starts a service.

ARG NODE_IMAGE=node:24.21.0-bookworm-slim

FROM ${NODE_IMAGE} AS install
ENV PNPM_HOME=/pnpm CI=true
RUN npm install --global --no-fund --no-audit pnpm@10.34.9
WORKDIR /app
# The lockfile alone decides what is fetched, so this layer is cached until it changes. The
# patches go with it: the lockfile names them, and the install applies them.
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
COPY patches ./patches
RUN pnpm fetch --prod
COPY package.json ./
COPY packages ./packages
COPY services ./services
RUN pnpm install --offline --prod --frozen-lockfile --ignore-scripts

# The dashboard's static files: built with its dev dependencies (Vite), only `dist` is kept.
FROM ${NODE_IMAGE} AS dashboard
ENV CI=true
RUN npm install --global --no-fund --no-audit pnpm@10.34.9
WORKDIR /app
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
COPY patches ./patches
COPY packages ./packages
COPY services ./services
RUN pnpm install --frozen-lockfile --ignore-scripts --filter @th/dashboard...
RUN node packages/dashboard/src/build-cli.ts

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=install /app /app
COPY --from=dashboard /app/packages/dashboard/dist /app/packages/dashboard/dist
# The image's `node` user (uid 1000); the code is owned by root and read-only to it.
USER 1000:1000
EXPOSE 8080 9080
# The gateway starts with the Node flags of services/gateway/src/heap.ts (GATEWAY_NODE_FLAGS).
CMD ["node", "--no-memory-reducer", "services/gateway/src/main.ts"]
