/**
 * Each setting is declared once (src/config/settings/): its Config, `help
 * config`, config.env.example and the tables of docs/configuration.md come
 * from that declaration. The generated files are rendered again here and
 * must match (`npm run gen:settings` rewrites them); no file of src/ spells
 * a key as a string of its own, every key a message or comment names is
 * declared, every declaration is read, and the secrets are the ones
 * declared secret.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"
import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Result } from "effect"
import { numberOf, optionalNumberOf } from "../../src/config/ConfigRange.js"
import * as ConfigErrors from "../../src/config/ConfigErrors.js"
import { secretNames } from "../../src/config/Secrets.js"
import type { NumberSetting } from "../../src/config/Setting.js"
import * as Settings from "../../src/config/settings/All.js"
import { configEnvExample, referenceBegin, withReferenceTables } from "../../src/config/SettingsReference.js"
import { allKeys } from "../../src/cli/HelpConfig.js"

const repo = path.join(import.meta.dirname, "..", "..")
const srcDir = path.join(repo, "src")
const declarationsDir = path.join(srcDir, "config", "settings")

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(full) : entry.name.endsWith(".ts") ? [full] : []
  })

/** The files of src/ outside the declarations. */
const readers = sourceFiles(srcDir).filter((file) => !file.startsWith(declarationsDir + path.sep))

const parse = (file: string) => ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)

/** Each string of `file` (literals, template pieces) with its line. */
const stringsOf = (file: string): Array<{ readonly text: string; readonly line: number }> => {
  const source = parse(file)
  const found: Array<{ text: string; line: number }> = []
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) {
      found.push({ text: node.text, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** Each comment of `file`: those before and after every node of its syntax tree. */
const commentsOf = (file: string): Array<string> => {
  const source = parse(file)
  const text = source.getFullText()
  const ranges = new Map<number, number>()
  const visit = (node: ts.Node): void => {
    for (const range of [...ts.getLeadingCommentRanges(text, node.getFullStart()) ?? [], ...ts.getTrailingCommentRanges(text, node.getEnd()) ?? []]) {
      ranges.set(range.pos, range.end)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return [...ranges].map(([pos, end]) => text.slice(pos, end))
}

const keyShaped = /^(?:PLANCKCLAW|ANTHROPIC|OPENAI|DISCORD|HISTORY|CLAWS)_[A-Z0-9_]+$/
const keyMention = /\b(?:PLANCKCLAW|ANTHROPIC|OPENAI|DISCORD|HISTORY|CLAWS)_[A-Z0-9_]*[A-Z0-9]\b/g
const declared = new Set(Settings.all.map((setting) => setting.key))
const relative = (file: string) => path.relative(repo, file)

describe("the settings' declarations", () => {
  it("config.env.example is the one rendered from them (npm run gen:settings rewrites it)", () => {
    expect(fs.readFileSync(path.join(repo, "config.env.example"), "utf8")).toBe(configEnvExample())
  })

  it("docs/configuration.md's tables are the ones rendered from them, the prose around them kept", () => {
    const page = fs.readFileSync(path.join(repo, "docs", "configuration.md"), "utf8")
    expect(page).toContain(referenceBegin)
    expect(page).toBe(withReferenceTables(page))
    expect(page).toContain("## The home")
  })

  it("`help config` shows each one, in the same groups and order as the reference", () => {
    expect(allKeys.map((help) => help.key)).toEqual(Settings.all.map((setting) => setting.key))
    expect(declared.size).toBe(Settings.all.length)
    const page = fs.readFileSync(path.join(repo, "docs", "configuration.md"), "utf8")
    const rows = [...page.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((match) => match[1])
    expect(rows).toEqual(allKeys.map((help) => help.key))
  })

  it("no file of src/ spells a key as a string of its own: each reads it through its declaration", () => {
    const strays = readers.flatMap((file) =>
      stringsOf(file).filter(({ text }) => keyShaped.test(text)).map(({ line, text }) => `${relative(file)}:${line}: "${text}"`)
    )
    expect(strays).toEqual([])
  })

  it("every key a message or a comment of src/ names is declared", () => {
    const unknown = readers.flatMap((file) =>
      [...stringsOf(file).map(({ text }) => text), ...commentsOf(file)]
        .flatMap((text) => [...text.matchAll(keyMention)].map((match) => match[0]))
        .filter((key) => !declared.has(key))
        .map((key) => `${relative(file)}: ${key}`)
    )
    expect([...new Set(unknown)]).toEqual([])
  })

  it("every declaration is read somewhere in src/", () => {
    const used = new Set<string>()
    for (const file of readers) {
      const source = parse(file)
      const aliases = new Map<string, string>()
      for (const statement of source.statements) {
        if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue
        const target = path.resolve(path.dirname(file), statement.moduleSpecifier.text)
        const group = path.dirname(target) === declarationsDir ? path.basename(target, ".js") : undefined
        const bindings = statement.importClause?.namedBindings
        if (group === undefined || bindings === undefined) continue
        if (ts.isNamespaceImport(bindings)) aliases.set(bindings.name.text, group)
        else for (const element of bindings.elements) used.add(`${group}.${(element.propertyName ?? element.name).text}`)
      }
      const visit = (node: ts.Node): void => {
        if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && aliases.has(node.expression.text)) {
          used.add(`${aliases.get(node.expression.text)}.${node.name.text}`)
        }
        ts.forEachChild(node, visit)
      }
      visit(source)
    }
    const unread = sourceFiles(declarationsDir).filter((file) => !file.endsWith("All.ts")).flatMap((file) => {
      const group = path.basename(file, ".ts")
      return [...fs.readFileSync(file, "utf8").matchAll(/^export const (\w+) =/gm)]
        .map((match) => `${group}.${match[1]}`)
        .filter((name) => !name.endsWith(".group") && !used.has(name))
    })
    expect(unread).toEqual([])
  })

  it("the secrets are the settings declared secret", () => {
    expect([...secretNames].sort()).toEqual(
      ["ANTHROPIC_API_KEY", "DISCORD_BOT_TOKEN", "OPENAI_API_KEY", "PLANCKCLAW_DATABASE_URL", "PLANCKCLAW_HTTP_TOKEN"]
    )
    for (const setting of Settings.all) {
      if (setting.secret === true) expect(setting.perAgent, setting.key).toBeUndefined()
    }
  })

  it.effect("each number's Config gives its declared default when unset and refuses a value just outside its range, naming the key", () =>
    Effect.gen(function*() {
      const numbers = Settings.all.filter((setting): setting is NumberSetting => setting.kind === "integer" || setting.kind === "seconds")
      expect(numbers.length).toBeGreaterThan(20)
      const read = (setting: NumberSetting, entries: Record<string, string>) => {
        const config: Config.Config<unknown> = setting.default === undefined
          ? optionalNumberOf({ ...setting, kind: "integer" })
          : numberOf({ ...setting, default: setting.default })
        return Effect.result(Effect.provideService(config, ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(entries)))
      }
      for (const setting of numbers) {
        if (setting.default !== undefined) {
          expect(setting.default, setting.key).toBeGreaterThanOrEqual(setting.min)
          expect(setting.default, setting.key).toBeLessThanOrEqual(setting.max)
          expect(Result.getOrUndefined(yield* read(setting, {})), setting.key).toBe(setting.default)
        }
        for (const outside of [setting.min - 1, setting.max + 1]) {
          const refused = yield* read(setting, { [setting.key]: String(outside) })
          expect(Result.isFailure(refused), `${setting.key}=${outside}`).toBe(true)
          if (Result.isFailure(refused)) expect(ConfigErrors.describe(refused.failure)).toContain(`${setting.key}: expected `)
        }
      }
    }))
})
