# harvest worker image. better-sqlite3 is compiled from source in the build stage (no prebuilt
# download), and the CLI compiled into dist/ there too (`npm ci` runs `prepare`); the runtime
# stage carries no compiler and no dev dependency. Node 24 LTS: Node 20 is past its end of life
# (harvest still runs on it, and CI tests it, until support for it is dropped).
FROM node:24-bookworm-slim AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY jobs ./jobs
RUN npm ci && test -f dist/BUILT && npm prune --omit=dev

FROM node:24-bookworm-slim
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/src ./src
COPY --from=build /app/jobs ./jobs
COPY --from=build /app/dist ./dist
COPY pipelines ./pipelines
ENV HARVEST_DATA_DIR=/data
VOLUME ["/data"]
ENTRYPOINT ["node", "bin/harvest.js"]
CMD ["worker"]
