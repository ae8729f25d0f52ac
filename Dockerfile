# harvest worker image. better-sqlite3 is compiled from source here (no prebuilt download).
FROM node:20-bookworm-slim
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY bin ./bin
COPY src ./src
COPY jobs ./jobs
COPY pipelines ./pipelines
ENV HARVEST_DATA_DIR=/data
VOLUME ["/data"]
ENTRYPOINT ["node", "bin/harvest.js"]
CMD ["worker"]
