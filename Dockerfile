# memgate service image: compiled JavaScript and production dependencies only.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -b tsconfig.build.json && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
# Memory: memgate limits V8's heap from MEMGATE_CACHE_MB (256 MiB by default) itself, so
# its RSS stays within MEMGATE_CACHE_MB + 190 MiB (docs/operations.md, Memory). Give the
# container MEMGATE_CACHE_MB + 200 MiB: `docker run --memory 456m` for the default budget,
# and 802 MiB more without MEMCACHED_SERVERS (the embedded store's counters). Set no
# --max-old-space-size in NODE_OPTIONS unless you size the heap yourself: it replaces
# memgate's limit.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config ./config
COPY dashboard ./dashboard
COPY proto ./proto
COPY examples/compose ./examples/compose
# Usage history (MEMGATE_USAGE_DB=./data/usage.db): writable by the service; mount a volume to keep it.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME /app/data
USER node
EXPOSE 8080
# Liveness, on the port the service listens on (PORT, read when the check runs; 8080 unset).
# Not /readyz: it fails while Memcached is unreachable, and restarting memgate then would
# bring no Memcached back but drop the checks it answers by onStoreError meanwhile.
HEALTHCHECK --interval=10s --timeout=3s CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/main.js"]
