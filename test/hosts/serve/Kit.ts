/** A host over a temporary agents directory, with an in-process brain that echoes. */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { Brain, type MessagesRequest, type MessagesResponse } from "../../../src/ports/Brain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import * as AgentHost from "../../../src/hosts/serve/AgentHost.js"

export const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-serve-"))

export const lastUserText = (request: MessagesRequest): string => {
  const last = request.messages[request.messages.length - 1]!
  return typeof last.content === "string" ? last.content : ""
}

export const isCompaction = (request: MessagesRequest) => lastUserText(request).startsWith("EXISTING SUMMARY:")

/**
 * Answers `echo <text>` (or what `special` returns), recording every request;
 * the soul (first line of the system prompt) names the agent in tests that set one.
 */
export const echoBrain = (special?: (request: MessagesRequest) => Effect.Effect<MessagesResponse> | undefined) => {
  const requests: Array<MessagesRequest> = []
  const layer = Layer.succeed(Brain, {
    complete: (request) =>
      Effect.suspend(() => {
        requests.push(request)
        return special?.(request) ?? Effect.succeed(ScriptedBrain.text(isCompaction(request) ? "a summary" : `echo ${lastUserText(request)}`))
      })
  })
  return { requests, layer }
}

export const settings = (values: Record<string, string>) =>
  ConfigProvider.layer(ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(values))), { preserveEmptyStrings: true }))

export const hostLayer = (
  root: string,
  brain: Layer.Layer<Brain>,
  values: Record<string, string> = {}
) =>
  AgentHost.layer.pipe(
    Layer.provide(Layer.merge(brain, InMemoryClaws.layer([]))),
    Layer.provide(settings({
      PLANCKCLAW_AGENTS_DIR: path.join(root, "agents"),
      PLANCKCLAW_DIR: path.join(root, "memory"),
      // Requests are checked in their plain shape here (system a string).
      PLANCKCLAW_PROMPT_CACHE: "0",
      ...values
    }))
  )

export const historyOf = (root: string, id: string): Array<{ role: string; content: string }> => {
  const file = path.join(root, "agents", id, "history.jsonl")
  if (!fs.existsSync(file)) return []
  return fs.readFileSync(file, "utf8").split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line))
}

/** The host, running until the test's scope closes. */
export const startHost = (root: string, brain: Layer.Layer<Brain>, values: Record<string, string> = {}) =>
  Effect.map(Layer.build(hostLayer(root, brain, values)), Context.get(AgentHost.AgentHost))
