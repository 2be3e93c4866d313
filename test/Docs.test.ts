/**
 * The user's documentation holds together: README stays a short guide, every
 * relative link and #anchor in README.md, docs/ and bench/'s pages resolves
 * (GitHub's heading slugs), every path of the repository README, docs/ and
 * bench/README.md name exists, and README and docs/ name no commit or issue
 * (those belong in bench/HISTORY.md and the history of the repository).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"

const root = path.join(import.meta.dirname, "..")
const read = (file: string) => fs.readFileSync(path.join(root, file), "utf8")
const guides = ["README.md", ...fs.readdirSync(path.join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]
const pages = [...guides, "bench/README.md", "bench/HISTORY.md"]

/** A page's lines with fenced code blanked (line numbers kept). */
const prose = (text: string): Array<string> => {
  let fence = false
  return text.split("\n").map((line) => {
    if (/^\s*```/.test(line)) {
      fence = !fence
      return ""
    }
    return fence ? "" : line
  })
}

/** GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
const anchorsOf = (file: string): Set<string> => {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const line of prose(read(file))) {
    const heading = /^#{1,6} (.*)$/.exec(line)
    if (heading === null) continue
    const slug = heading[1]!.trim().toLowerCase().replace(/<[^>]+>/g, "").replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/ /g, "-")
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

/** Every broken relative link of a page, as `file:line: target`. */
const brokenLinks = (file: string): Array<string> =>
  prose(read(file)).flatMap((line, index) =>
    [...line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)].flatMap((match) => {
      const target = match[1]!
      if (/^[a-z]+:/.test(target)) return []
      const [linked, anchor] = target.split("#") as [string, string | undefined]
      const resolved = linked === "" ? file : path.normalize(path.join(path.dirname(file), linked))
      if (!fs.existsSync(path.join(root, resolved))) return [`${file}:${index + 1}: no file ${target}`]
      if (anchor !== undefined && resolved.endsWith(".md") && !anchorsOf(resolved).has(anchor)) {
        return [`${file}:${index + 1}: no anchor ${target}`]
      }
      return []
    })
  )

/**
 * Every `src/`, `bin/`, `bench/` or `test/` path a page names (in prose or
 * code) that does not exist, as `file:line: path`. Not a path inside another
 * (`/bin/sh`, `~/src/planckclaw`); a trailing `.` or `,` ends the sentence.
 */
/** Paths the pages name as what a run writes, not what the repository holds. */
const written = new Set(["bench/.work/", "bench/compare-results.json"])

const missingPaths = (file: string): Array<string> =>
  read(file).split("\n").flatMap((line, index) =>
    [...line.matchAll(/(?<![\w~./-])(?:src|bin|bench|test)\/[\w./-]*/g)].flatMap((match) => {
      const named = match[0].replace(/[.,]+$/, "")
      return written.has(named) || fs.existsSync(path.join(root, named)) ? [] : [`${file}:${index + 1}: ${named}`]
    })
  )

describe("the documentation", () => {
  it("README is a guide of at most 400 lines that starts both ways in two commands", () => {
    const readme = read("README.md")
    expect(readme.split("\n").length).toBeLessThanOrEqual(400)
    expect(readme).toContain("npm ci && npm start")
    expect(readme).toContain("npm ci && npm test")
  })

  it("every relative link and anchor resolves", () => {
    expect(pages.flatMap(brokenLinks)).toEqual([])
  })

  it("finds a broken link and a broken anchor when there is one", () => {
    const probe = path.join("docs", `.probe-${process.pid}.md`)
    fs.writeFileSync(path.join(root, probe), "# Probe\n\n[a](nowhere.md) [b](README.md#no-such-heading) [c](#probe)\n")
    try {
      expect(brokenLinks(probe)).toEqual([`${probe}:3: no file nowhere.md`, `${probe}:3: no anchor README.md#no-such-heading`])
    } finally {
      fs.rmSync(path.join(root, probe), { force: true })
    }
  })

  it("every src/, bin/, bench/ and test/ path README, docs/ and bench/README.md name exists", () => {
    expect([...guides, "bench/README.md"].flatMap(missingPaths)).toEqual([])
  })

  it("finds a path that does not exist when one is named", () => {
    const probe = path.join("docs", `.probe-paths-${process.pid}.md`)
    fs.writeFileSync(path.join(root, probe), "See `src/agent/Agent.ts`, src/Nowhere.ts. and bench/run.mjs, not /bin/sh or ~/src/x.\n")
    try {
      expect(missingPaths(probe)).toEqual([`${probe}:1: src/Nowhere.ts`])
    } finally {
      fs.rmSync(path.join(root, probe), { force: true })
    }
  })

  it("README and docs/ name no commit hash and no issue number", () => {
    const named = guides.flatMap((file) =>
      prose(read(file)).flatMap((line, index) =>
        [...line.matchAll(/\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b|\bissues? #?\d+\b/gi)]
          .filter((match) => match[0].toLowerCase().startsWith("issue") || match[0] === match[0].toLowerCase())
          .map((match) => `${file}:${index + 1}: ${match[0]}`)
      )
    )
    expect(named).toEqual([])
  })
})
