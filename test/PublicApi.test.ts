/**
 * The public API, pinned: the names `planckclaw` and `planckclaw/cluster`
 * export (a change to either list here is a deliberate change of the API),
 * which name every service and error in their layers' and effects' types,
 * and the programs written against it, docs/embedding.md's example and
 * test/Embedding.test.ts, typecheck through the entry alone (the example as
 * written, `planckclaw` resolved to src/index.ts) and import nothing else of
 * src/. test/Embedding.test.ts runs them; test/HostProject.test.ts runs the
 * example against the packed package.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import ts from "typescript"
import * as PublicApi from "../src/index.js"

const root = path.join(import.meta.dirname, "..")

/** `planckclaw`: what a host needs, not every module (src/index.ts says why each group is there). */
const MAIN_ENTRY = [
  "Agent",
  "AgentConfig",
  "AgentHost",
  "AnthropicBrain",
  "Brain",
  "Claws",
  "Compactor",
  "ConfigFile",
  "FoldStore",
  "HttpApi",
  "HttpApiClientOf",
  "HttpApiDefinition",
  "HttpApiErrors",
  "InMemoryClaws",
  "InMemoryInteract",
  "Inbox",
  "Interact",
  "Memory",
  "MemoryHold",
  "MissingSetting",
  "OpenAiBrain",
  "ScriptClaws",
  "ScriptedBrain"
]

/** `planckclaw/cluster`. */
const CLUSTER_ENTRY = ["AgentEntity", "ClusterHost", "ClusterServe", "ClusterSettings"]

/** The first ```ts block of docs/embedding.md. */
const embeddingExample = (): string => {
  const block = /```ts\n([\s\S]*?)```/.exec(fs.readFileSync(path.join(root, "docs", "embedding.md"), "utf8"))
  if (block === null) throw new Error("docs/embedding.md has no ts block")
  return block[1]!
}

/** The modules a program imports, and the names it takes from `entry`. */
const importsOf = (source: string, entry: string) => {
  const statements = [...source.matchAll(/^import\s+(type\s+)?(?:\{([^}]*)\}|\*\s+as\s+\w+|\w+)\s+from\s+"([^"]+)"/gm)]
  return {
    modules: statements.map((match) => match[3]!),
    names: statements.filter((match) => match[3] === entry).flatMap((match) =>
      (match[2] ?? "").split(",").map((name) => name.trim().split(/\s+as\s+/)[0]!).filter((name) => name !== "")
    )
  }
}

/**
 * Type errors of `files` (path → text; a path that is not on disk is given
 * here), with this repository's compiler options and `planckclaw` resolved
 * to src/index.ts, as a host's copy of the package resolves to dist/index.d.ts.
 */
const typeErrors = (files: Record<string, string>, previous?: ts.Program): { errors: Array<string>; program: ts.Program } => {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(root, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
    }
  })!
  const options: ts.CompilerOptions = {
    ...config.options,
    noEmit: true,
    allowImportingTsExtensions: true,
    paths: { planckclaw: [path.join(root, "src", "index.ts")] }
  }
  const host = ts.createCompilerHost(options)
  const given = (file: string) => files[path.resolve(file)]
  const { fileExists, readFile, getSourceFile } = host
  host.fileExists = (file) => given(file) !== undefined || fileExists.call(host, file)
  host.readFile = (file) => given(file) ?? readFile.call(host, file)
  host.getSourceFile = (file, language, ...rest) => {
    const text = given(file)
    return text === undefined ? getSourceFile.call(host, file, language, ...rest) : ts.createSourceFile(file, text, language)
  }
  // Given the previous program, the files it read are reused: only what changed is checked again.
  const program = ts.createProgram({ rootNames: Object.keys(files), options, host, ...(previous === undefined ? {} : { oldProgram: previous }) })
  const errors = ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file === undefined
      ? ""
      : `${path.relative(root, diagnostic.file.fileName)}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1}: `
    return where + ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")
  })
  return { errors, program }
}

/**
 * The services a public layer provides or requires, and the errors a public
 * layer or effect fails with (or a function returning one), that no public
 * module exports: a host could not write the type of what it assembles.
 */
const unnamedInSignatures = (): Array<string> => {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(root, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
    }
  })!
  const entries = [path.join(root, "src", "index.ts"), path.join(root, "src", "hosts", "cluster", "index.ts")]
  const program = ts.createProgram({ rootNames: entries, options: { ...config.options, noEmit: true } })
  const checker = program.getTypeChecker()
  const resolved = (symbol: ts.Symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol)
  const modules = entries.flatMap((entry) => checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!).map(resolved))
  const nameable = new Set(modules.flatMap((module) => checker.getExportsOfModule(module).map(resolved)))
  const declaredIn = (symbol: ts.Symbol | undefined) => symbol?.declarations?.[0]?.getSourceFile().fileName ?? ""
  const unnamed = new Set<string>()
  const check = (type: ts.Type, where: string) => {
    for (const member of type.isUnion() ? type.types : [type]) {
      const symbol = member.getSymbol()
      if (symbol !== undefined && declaredIn(symbol).startsWith(path.join(root, "src")) && !nameable.has(symbol)) {
        unnamed.add(`${where}: ${symbol.name} (${path.relative(root, declaredIn(symbol))})`)
      }
    }
  }
  const visit = (type: ts.Type, where: string) => {
    const name = type.getSymbol()?.name
    if ((name === "Layer" || name === "Effect") && declaredIn(type.getSymbol()).includes("/node_modules/effect/")) {
      const [out, error, requirement] = checker.getTypeArguments(type as ts.TypeReference)
      if (name === "Layer") check(out!, where)
      check(error!, where)
      check(requirement!, where)
    }
    for (const signature of type.getCallSignatures()) visit(signature.getReturnType(), where)
  }
  for (const module of modules) {
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = resolved(exported)
      if (symbol.flags & (ts.SymbolFlags.Variable | ts.SymbolFlags.Function)) visit(checker.getTypeOfSymbol(symbol), `${path.relative(root, declaredIn(module))} ${exported.name}`)
    }
  }
  return [...unnamed]
}

/**
 * The types of AgentHostService's members that no public module exports: what
 * each takes and what its effect succeeds or fails with (a union's members,
 * an array's elements), declared in src/ under a name (a type literal is
 * written in place). An embedder holding the service could not name them.
 */
const unnamedInHostService = (): Array<string> => {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(root, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
    }
  })!
  const entry = path.join(root, "src", "index.ts")
  const program = ts.createProgram({ rootNames: [entry], options: { ...config.options, noEmit: true } })
  const checker = program.getTypeChecker()
  const resolved = (symbol: ts.Symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol)
  const modules = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!).map(resolved)
  const nameable = new Set(modules.flatMap((module) => checker.getExportsOfModule(module).map(resolved)))
  const declaredIn = (symbol: ts.Symbol | undefined) => symbol?.declarations?.[0]?.getSourceFile().fileName ?? ""
  const agentHost = modules.find((module) => module.name.endsWith("AgentHost\""))!
  const service = checker.getExportsOfModule(agentHost).map(resolved).find((symbol) => symbol.name === "AgentHostService")!
  const unnamed = new Set<string>()
  const check = (type: ts.Type, where: string): void => {
    for (const member of type.isUnion() ? type.types : [type]) {
      if (checker.isArrayType(member)) {
        for (const element of checker.getTypeArguments(member as ts.TypeReference)) check(element, where)
        continue
      }
      const symbol = member.aliasSymbol ?? member.getSymbol()
      if (symbol === undefined || symbol.name.startsWith("__") || !declaredIn(symbol).startsWith(path.join(root, "src"))) continue
      if (!nameable.has(symbol)) unnamed.add(`${where}: ${symbol.name} (${path.relative(root, declaredIn(symbol))})`)
    }
  }
  for (const member of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(service))) {
    const type = checker.getNonNullableType(checker.getTypeOfSymbol(member))
    for (const signature of type.getCallSignatures()) {
      for (const parameter of signature.getParameters()) check(checker.getNonNullableType(checker.getTypeOfSymbol(parameter)), member.name)
      const result = signature.getReturnType()
      const isEffect = result.getSymbol()?.name === "Effect" && declaredIn(result.getSymbol()).includes("/node_modules/effect/")
      if (!isEffect) check(result, member.name)
      else for (const argument of checker.getTypeArguments(result as ts.TypeReference).slice(0, 2)) check(argument, member.name)
    }
  }
  return [...unnamed].sort()
}

describe("the public API", () => {
  it("planckclaw exports these names and no others", () => {
    expect(Object.keys(PublicApi).sort()).toEqual(MAIN_ENTRY)
  })

  it("planckclaw/cluster exports these names and no others", async () => {
    const cluster = await import("../src/hosts/cluster/index.js")
    expect(Object.keys(cluster).sort()).toEqual(CLUSTER_ENTRY)
  })

  it("the package's exports point at the two entries", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { exports: Record<string, { default: string }> }
    expect(Object.fromEntries(Object.entries(pkg.exports).map(([subpath, target]) => [subpath, target.default]))).toEqual({
      ".": "./dist/index.js",
      "./cluster": "./dist/hosts/cluster/index.js"
    })
  })

  it("every service a public layer provides or requires, and every error it fails with, is exported by a public module", () => {
    expect(unnamedInSignatures()).toEqual([])
  }, 60_000)

  it("what the AgentHost service's members take and answer can be named from the entry", () => {
    expect(unnamedInHostService()).toEqual([])
  }, 60_000)

  it("the embedding example and test/Embedding.test.ts take only exported names, from the entry alone", () => {
    const example = importsOf(embeddingExample(), "planckclaw")
    expect(example.modules.filter((module) => module !== "effect")).toEqual(["planckclaw"])
    const embedding = importsOf(fs.readFileSync(path.join(root, "test", "Embedding.test.ts"), "utf8"), "../src/index.js")
    expect(embedding.modules.filter((module) => module.includes("src/"))).toEqual(["../src/index.js"])
    for (const name of [...example.names, ...embedding.names]) expect(MAIN_ENTRY, name).toContain(name)
    expect(example.names.length).toBeGreaterThan(0)
    expect(embedding.names.length).toBeGreaterThan(0)
  })

  it("the embedding example, as written, and test/Embedding.test.ts typecheck against the entry", () => {
    const example = path.join(root, "docs", "embedding.example.ts")
    const embedding = path.join(root, "test", "Embedding.test.ts")
    const checked = typeErrors({ [example]: embeddingExample(), [embedding]: fs.readFileSync(embedding, "utf8") })
    expect(checked.errors).toEqual([])
    // The check can fail: a name the entry does not export is an error.
    const probe = typeErrors({ [example]: embeddingExample().replace("InMemoryClaws,", "InMemoryClaws, Intake,") }, checked.program)
    expect(probe.errors.join("\n")).toMatch(/has no exported member .Intake./)
  }, 180_000)
})
