/**
 * The shape of src/: `index.ts` and folders by role, each folder in one
 * layer, and every import (static, dynamic, type-only, re-export) from a
 * file to one in its own layer or a lower one, never in a circle. The layer
 * order is written here and nowhere else; a new folder must be given a layer.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

/** Top to bottom: a file may import from its own layer and the ones below it. */
const layers: ReadonlyArray<ReadonlyArray<string>> = [
  ["cli"], // the entries, argument parsing, help, exit codes, one file per command (commands/, doctor/)
  ["hosts"], // many agents: serve (HTTP and Discord), the cluster
  ["pipes"], // both ends of the six FIFOs, and the bridges served on their far ends
  ["brain", "claws", "interact", "schedule"], // the adapters of each port; the schedule (its store, firing, delivery, tool); never the wiring above them
  ["agent"], // the agent, its turn, intake, prompt, slash commands, compaction
  ["usage", "memory"], // the stores: memory (files, SQL), the usage ledger
  ["ports"], // Brain, Claws, Interact: what the agent talks to
  ["runtime", "config"] // process helpers, files, framing, logging, errors; the home and the settings
]

const srcDir = path.join(import.meta.dirname, "..", "src")

interface Import {
  readonly specifier: string
  /** The imported file, relative to src/ (`.ts`). */
  readonly target: string
}

/** Every .ts file of `dir`, relative to src/. */
const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(full)
    return entry.name.endsWith(".ts") ? [path.relative(srcDir, full).split(path.sep).join("/")] : []
  })

/** The relative imports of each file of src/ (TypeScript's own scan: import, export … from, import()). */
const readGraph = (): Map<string, ReadonlyArray<Import>> =>
  new Map(sourceFiles(srcDir).map((file) => {
    const scan = ts.preProcessFile(fs.readFileSync(path.join(srcDir, file), "utf8"), true, true)
    const imports = scan.importedFiles
      .filter((imported) => imported.fileName.startsWith("."))
      .map((imported) => ({
        specifier: imported.fileName,
        target: path.posix.normalize(path.posix.join(path.posix.dirname(file), imported.fileName)).replace(/\.js$/, ".ts")
      }))
    return [file, imports]
  }))

/** A file's layer (0 at the top); `index.ts`, the public API, is above them all (-1); undefined: a folder with none. */
const layerOf = (file: string): number | undefined => {
  if (!file.includes("/")) return file === "index.ts" ? -1 : undefined
  const index = layers.findIndex((folders) => folders.includes(file.split("/")[0]!))
  return index === -1 ? undefined : index
}

/** Each import from a lower layer to a higher one, and each file outside src/'s folders, in words. */
const layerViolations = (graph: ReadonlyMap<string, ReadonlyArray<Import>>): Array<string> => {
  const problems: Array<string> = []
  for (const [file, imports] of graph) {
    const from = layerOf(file)
    if (from === undefined) {
      problems.push(file.includes("/")
        ? `src/${file}: its folder ${file.split("/")[0]}/ is in no layer (add it to the layers of test/ImportGraph.test.ts)`
        : `src/${file}: src/ holds only index.ts and folders`)
      continue
    }
    for (const { specifier, target } of imports) {
      const to = layerOf(target)
      if (!graph.has(target)) problems.push(`src/${file} imports "${specifier}": no such file src/${target}`)
      else if (to !== undefined && to < from) {
        problems.push(`src/${file} imports "${specifier}" upward: ${layers[to]!.join("/")} is above ${layers[from]!.join("/")}`)
      }
    }
  }
  return problems
}

/** Each import circle (files that import each other, directly or through others), with its imports, in words. */
const circles = (graph: ReadonlyMap<string, ReadonlyArray<Import>>): Array<string> => {
  // Tarjan's strongly connected components.
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<string> = []
  const visit = (file: string): void => {
    index.set(file, next)
    low.set(file, next++)
    stack.push(file)
    onStack.add(file)
    for (const { target } of graph.get(file) ?? []) {
      if (!graph.has(target)) continue
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!))
    }
    if (low.get(file) !== index.get(file)) return
    const members = new Set<string>()
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member)
      members.add(member)
      if (member === file) break
    }
    const inside = [...new Set([...members].flatMap((member) =>
      (graph.get(member) ?? []).filter(({ target }) => members.has(target)).map(({ specifier }) => `src/${member} imports "${specifier}"`)
    ))]
    if (inside.length > 0) found.push(`circle of ${members.size}: ${inside.join("; ")}`)
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return found
}

describe("the import graph of src/", () => {
  const graph = readGraph()

  it("src/ holds index.ts and folders by role, each in a layer, and nothing imports upward", () => {
    expect(graph.size).toBeGreaterThan(100)
    expect(layerViolations(graph)).toEqual([])
  })

  it("has no import circle", () => {
    expect(circles(graph)).toEqual([])
  })

  it("the checks name an upward import, a circle and a stray file (a graph made for the purpose)", () => {
    const made = new Map<string, ReadonlyArray<Import>>([
      ["runtime/Low.ts", [{ specifier: "../agent/High.js", target: "agent/High.ts" }]],
      ["agent/High.ts", [{ specifier: "../runtime/Low.js", target: "runtime/Low.ts" }]],
      ["Stray.ts", []]
    ])
    expect(layerViolations(made)).toEqual([
      `src/runtime/Low.ts imports "../agent/High.js" upward: agent is above runtime/config`,
      "src/Stray.ts: src/ holds only index.ts and folders"
    ])
    expect(circles(made)).toEqual([
      `circle of 2: src/agent/High.ts imports "../runtime/Low.js"; src/runtime/Low.ts imports "../agent/High.js"`
    ])
  })
})
