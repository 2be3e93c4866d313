# PlanckClaw in a container: the agent runs as the unprivileged user `node`
# (uid 1000), and its home (config.env, memory/, claws/, agents/) is the
# volume /home/node/planckclaw. See docs/install.md.
#
#   docker build -t planckclaw .
#   docker run --rm -v planckclaw:/home/node/planckclaw planckclaw init
#   docker run -it --rm -v planckclaw:/home/node/planckclaw planckclaw run

# Node 24: bin/planckclaw refuses a Node older than 22.19.
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Sources come next: `prepare` (the build) runs explicitly below.
RUN npm ci --ignore-scripts && npm rebuild esbuild
COPY tsconfig.json tsconfig.build.json ./
COPY src src
# The build reads these too: build/bundle.mjs imports bin/code-cache.mjs and bundles the web console.
COPY bin bin
COPY console console
COPY build build
RUN npm run build

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    PLANCKCLAW_HOME=/home/node/planckclaw \
    PLANCKCLAW_RUN_DIR=/tmp/planckclaw
WORKDIR /opt/planckclaw
COPY package.json package-lock.json LICENSE config.env.example ./
# The command is one bundle (dist/cli) that leaves out only discord.js.
RUN npm ci --omit=dev --omit=peer --ignore-scripts && npm cache clean --force
COPY bin bin
COPY claws claws
COPY memory/soul.md memory/soul.md
COPY --from=build /src/dist dist
RUN ln -s /opt/planckclaw/bin/planckclaw /usr/local/bin/planckclaw \
    && mkdir -p /home/node/planckclaw && chown node:node /home/node/planckclaw && chmod 700 /home/node/planckclaw
USER node
VOLUME ["/home/node/planckclaw"]
# serve's default port, for `serve --http 0.0.0.0:7878` (which needs PLANCKCLAW_HTTP_TOKEN).
EXPOSE 7878
ENTRYPOINT ["planckclaw"]
CMD ["run"]
