/**
 * The measured build's own modules, for the measurements that run its code
 * in this process (serve.mjs, brain-call.mjs): its dist/ and the packages
 * its dist/ imports (`effect`, `@effect/platform-node`...), resolved from its
 * checkout (lib/work.mjs's buildDir, PLANCKCLAW_BENCH_REPO), so the bench
 * and the build share one copy of Effect, whichever major version the build
 * is on (3 on main, 4 on the port).
 *
 * Where Effect 3 and 4 spell the same thing differently, the few helpers
 * below say it once for both, so the measuring code itself is the same for
 * every build.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { buildDir, distDir, distFile } from "./work.mjs"

/**
 * A bare specifier resolves from the importing file's directory: a tiny
 * module written inside the build's checkout (bench/.work there, git-ignored)
 * imports for us, so Node's own resolver picks the build's node_modules and
 * the `import` condition of each package's exports.
 */
const loaderDir = path.join(buildDir, "bench", ".work")
const loaderFile = path.join(loaderDir, `build-loader-${process.pid}.mjs`)
fs.mkdirSync(loaderDir, { recursive: true })
fs.writeFileSync(loaderFile, "export const load = (specifier) => import(specifier)\n")
process.on("exit", () => fs.rmSync(loaderFile, { force: true }))
const { load } = await import(pathToFileURL(loaderFile).href)

/** A package module as the build's dist/ sees it, e.g. `fromBuild("effect")`. */
export const fromBuild = (specifier) => load(specifier)

/** A module of the build's dist/, e.g. `fromDist("brain/AnthropicBrain.js")` (found where an older build has it too: distFile). */
export const fromDist = (file) => import(pathToFileURL(distFile(distDir, file)).href)

const versionOf = (name) => {
  const file = path.join(buildDir, "node_modules", ...name.split("/"), "package.json")
  return JSON.parse(fs.readFileSync(file, "utf8")).version
}

export const effectVersion = versionOf("effect")
export const isEffect4 = Number(effectVersion.split(".")[0]) >= 4

/** The `effect` barrel of the build. */
export const effect = await fromBuild("effect")
const { ConfigProvider, Effect, Layer } = effect

/** A settings provider over `[key, value]` pairs (an empty string is a value, as in config.env). */
export const settingsProvider = (entries) =>
  isEffect4
    ? ConfigProvider.fromEnvRecord(Object.fromEntries(entries), { preserveEmptyStrings: true })
    : ConfigProvider.fromMap(new Map(entries))

/** A layer that makes `provider` the settings of what it is provided to. */
export const settingsLayer = (provider) =>
  isEffect4 ? ConfigProvider.layer(provider) : Layer.setConfigProvider(provider)

/** `self` reading its settings from `provider`. */
export const withSettings = (self, provider) =>
  isEffect4
    ? Effect.provideService(self, ConfigProvider.ConfigProvider, provider)
    : Effect.withConfigProvider(self, provider)

/** `self` run with `scope` as its Scope (v3 Scope.extend, v4 Scope.provide). */
export const inScope = (self, scope) => (isEffect4 ? effect.Scope.provide(self, scope) : effect.Scope.extend(self, scope))

/** Logs at warning level and up only. */
export const warningsAndUp = isEffect4
  ? Layer.succeed(effect.References.MinimumLogLevel, "Warn")
  : effect.Logger.minimumLogLevel(effect.LogLevel.Warning)

/** The module of the HTTP server's service (`HttpServer.HttpServer`). */
export const httpServerModule = () => fromBuild(isEffect4 ? "effect/http/HttpServer" : "@effect/platform/HttpServer")

/**
 * The HTTP client layers a brain can be given: `fetch`, `undici`, `nodeHttp`
 * (node:http on a keep-alive agent: Effect 4's layerNodeHttpOptions, whose
 * plain layerNodeHttp opens a connection per request; Effect 3's
 * NodeHttpClient.layer) and `shipped`, the one the build's Bridges gives its
 * brains (its brain/BrainHttpClient.js where it has one, fetch before).
 */
export const httpClientLayers = async () => {
  const fetch = await fromBuild(isEffect4 ? "effect/http/FetchHttpClient" : "@effect/platform/FetchHttpClient")
  const node = await fromBuild("@effect/platform-node/NodeHttpClient")
  const nodeHttp = node.layerNodeHttpOptions?.({ keepAlive: true }) ?? node.layerNodeHttp ?? node.layer
  const shippedFile = distFile(distDir, "brain/BrainHttpClient.js")
  const shipped = fs.existsSync(shippedFile) ? (await fromDist("brain/BrainHttpClient.js")).layer : fetch.layer
  return { fetch: fetch.layer, undici: node.layerUndici, nodeHttp, shipped }
}

/** The build's own version line, for reports. */
export const describeBuild = () => `${buildDir} (effect ${effectVersion})`
