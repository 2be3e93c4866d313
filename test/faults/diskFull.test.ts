/**
 * A full disk under the memory directory, for real: a small tmpfs mounted
 * for the test (we may be root), or, where mounting is not allowed, a file
 * size limit (RLIMIT_FSIZE, set with prlimit on the running agent) so that
 * writes past it fail with EFBIG. `PLANCKCLAW_TEST_DISK=rlimit` forces the
 * second way. Either way the built `planckclaw run` must answer every
 * message, leave no cut line in history.jsonl, say so once, and store every
 * exchange, in order, once space returns: later in the run or at the next
 * start.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { make as brainServer, echo } from "../support/AnthropicServer.js"
import { type Sandbox } from "../support/Sandbox.js"
import { answered, occurrences, sandbox, unparsableLines } from "./Campaign.js"
import { planckclaw, strays } from "./Processes.js"

const TIMEOUT = 120_000

interface SmallDisk {
  readonly kind: "tmpfs" | "rlimit"
  /** Leaves `pages` 4 KiB pages free (tmpfs), or lets no file grow past `history.jsonl`'s size plus that (rlimit). */
  readonly fill: (pid: number, pages: number) => void
  /** Space returns. */
  readonly free: (pid: number) => void
}

const run = (command: string, args: ReadonlyArray<string>) => child.spawnSync(command, args, { encoding: "utf8" })

const forced = process.env["PLANCKCLAW_TEST_DISK"] === "rlimit"

/** Mounts a tmpfs of `kib` KiB on `dir` for the scope; false where mounting is not allowed. */
const tmpfs = (dir: string, kib: number): Effect.Effect<boolean, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      if (forced) return false
      const mounted = run("mount", ["-t", "tmpfs", "-o", `size=${kib}k,mode=0700`, "tmpfs", dir])
      return mounted.status === 0
    }),
    (mounted) => Effect.sync(() => void (mounted && run("umount", ["-l", dir])))
  )

const limitFileSize = (pid: number, limit: string) => {
  const result = run("prlimit", ["--pid", String(pid), `--fsize=${limit}:`])
  expect(result.status, result.stderr).toBe(0)
}

/**
 * Fills `mount` (a tmpfs) until exactly `pages` pages are left. The agent may
 * still be settling its last exchange (a journal emptied frees a page), so
 * the filler is resized until the count holds.
 */
const fillTmpfs = (mount: string, pages: number) => {
  const filler = path.join(mount, "filler")
  fs.writeFileSync(filler, "")
  for (let attempt = 0; attempt < 50 && fs.statfsSync(mount).bavail !== pages; attempt++) {
    const stats = fs.statfsSync(mount)
    const size = fs.statSync(filler).size + (stats.bavail - pages) * stats.bsize
    fs.writeFileSync(filler, Buffer.alloc(Math.max(0, size)))
  }
  expect(fs.statfsSync(mount).bavail).toBe(pages)
}

/**
 * The whole memory directory on a small disk: history, the inbox journal
 * and the lock files all compete for the last pages.
 */
const smallMemory = (box: Sandbox): Effect.Effect<SmallDisk, never, Scope.Scope> =>
  Effect.map(tmpfs(box.memory, 512), (mounted): SmallDisk =>
    mounted
      ? {
        kind: "tmpfs",
        fill: (_, pages) => fillTmpfs(box.memory, pages),
        free: () => fs.unlinkSync(path.join(box.memory, "filler"))
      }
      : rlimitDisk(box))

const rlimitDisk = (box: Sandbox): SmallDisk => ({
  kind: "rlimit",
  fill: (pid, pages) => limitFileSize(pid, String(fs.statSync(path.join(box.memory, "history.jsonl")).size + pages * 4096)),
  free: (pid) => limitFileSize(pid, "unlimited")
})

/**
 * Only history.jsonl on a small disk (a file of a tmpfs bind-mounted onto
 * it): the journal has room, history has none.
 */
const smallHistory = (box: Sandbox): Effect.Effect<SmallDisk, never, Scope.Scope> =>
  Effect.gen(function*() {
    const small = box.path("small")
    const mounted = yield* tmpfs(small, 256)
    if (!mounted) {
      box.writeMemory("history.jsonl", SEED)
      return rlimitDisk(box)
    }
    const history = path.join(box.memory, "history.jsonl")
    fs.mkdirSync(box.memory, { recursive: true, mode: 0o700 })
    fs.writeFileSync(history, "", { mode: 0o600 })
    fs.writeFileSync(path.join(small, "history.jsonl"), SEED, { mode: 0o600 })
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const bound = run("mount", ["--bind", path.join(small, "history.jsonl"), history])
        expect(bound.status, bound.stderr).toBe(0)
      }),
      () => Effect.sync(() => void run("umount", ["-l", history]))
    )
    return { kind: "tmpfs", fill: (_, pages) => fillTmpfs(small, pages), free: () => fs.unlinkSync(path.join(small, "filler")) }
  })

/**
 * Until the agent has emptied its inbox journal: it truncates it just after
 * a reply is written, which frees a page, so a disk filled before that would
 * have one page more than asked once it happens (seen under load).
 */
const journalEmptied = (box: Sandbox): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const journal = path.join(box.memory, ".inbox.jsonl")
    const empty = () => !fs.existsSync(journal) || fs.statSync(journal).size === 0
    let done = false
    const watcher = fs.watch(box.memory, () => check())
    const check = () => {
      if (done || !empty()) return
      done = true
      watcher.close()
      resume(Effect.void)
    }
    // After the watch is set, so a truncation in between is not missed.
    check()
    return Effect.sync(() => watcher.close())
  })

const FAILURE = "cannot store exchanges"

/**
 * Older exchanges, so that history is larger than the journal ever gets: a
 * file size limit then stops history and not the journal.
 */
const SEED = Array.from({ length: 400 }, (_, i) => answered([`old question ${i}`, `old answer ${i}`])).join("")
const SETTINGS = { HISTORY_MAX: "100000" }

describe("faults: a full disk under memory", () => {
  it.live("disk full mid-run → every reply sent, no cut line, logged once, all stored in order once space returns", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const disk = yield* smallMemory(box)
      const server = yield* brainServer(echo)
      const proc = yield* planckclaw(box, ["run"], box.envWith({ ANTHROPIC_BASE_URL: server.url }))
      yield* proc.write("first\n")
      yield* proc.awaitLines(1)
      yield* journalEmptied(box)
      disk.fill(proc.pid, 4)
      // Longer than what is left: a write of it can only be partial.
      const big = `second ${"x".repeat(40_000)}`
      yield* proc.write(`${big}\n`)
      yield* proc.awaitLines(2)
      yield* proc.write("third\n")
      expect(yield* proc.awaitLines(3)).toEqual(["re: first", `re: ${big}`, "re: third"])

      const history = path.join(box.memory, "history.jsonl")
      const before = fs.readFileSync(history, "utf8")
      expect(unparsableLines(before), disk.kind).toEqual([])
      expect(before).toBe(answered(["first", "re: first"]))
      expect(occurrences(proc.stderr(), FAILURE), proc.stderr()).toBe(1)
      const logged = proc.stderr().split("\n").find((entry) => entry.includes(FAILURE))!
      expect(logged).toContain(box.memory)
      expect(logged).toMatch(/\d+ bytes free/)
      expect(occurrences(proc.stderr(), "cannot write the inbox journal")).toBeLessThanOrEqual(1)

      disk.free(proc.pid)
      yield* proc.write("fourth\n")
      expect((yield* proc.awaitLines(4))[3]).toBe("re: fourth")
      yield* proc.closeInput
      expect((yield* proc.ended).code, proc.stderr()).toBe(0)
      expect(fs.readFileSync(history, "utf8")).toBe(
        answered(["first", "re: first"], [big, `re: ${big}`], ["third", "re: third"], ["fourth", "re: fourth"])
      )
      expect(box.memoryFile(".inbox.jsonl")).toBe("")
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)

  it.live("history full at the end of a run → the exchange waits in the journal and is stored at the next start", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const disk = yield* smallHistory(box)
      const server = yield* brainServer(echo)
      const env = box.envWith({ ANTHROPIC_BASE_URL: server.url, ...SETTINGS })
      const first = yield* planckclaw(box, ["run"], env)
      yield* first.write("first\n")
      yield* first.awaitLines(1)
      yield* journalEmptied(box)
      disk.fill(first.pid, 0)
      const big = `second ${"y".repeat(10_000)}`
      yield* first.write(`${big}\n`)
      yield* first.awaitLines(2)
      yield* first.closeInput
      expect((yield* first.ended).code, first.stderr()).toBe(0)
      expect(first.stdout()).toBe(`re: first\nre: ${big}\n`)
      expect(occurrences(first.stderr(), FAILURE)).toBe(1)
      expect(box.memoryFile("history.jsonl")).toBe(SEED + answered(["first", "re: first"]))
      expect(box.memoryFile(".inbox.jsonl")).toContain(big)

      if (disk.kind === "tmpfs") disk.free(first.pid)
      const second = yield* planckclaw(box, ["run"], env)
      yield* second.write("third\n")
      yield* second.awaitLines(1)
      yield* second.closeInput
      expect((yield* second.ended).code, second.stderr()).toBe(0)
      // Not answered again: it was delivered; only stored.
      expect(second.stdout()).toBe("re: third\n")
      expect(box.memoryFile("history.jsonl")).toBe(
        SEED + answered(["first", "re: first"], [big, `re: ${big}`], ["third", "re: third"])
      )
      expect(box.memoryFile(".inbox.jsonl")).toBe("")
      expect((yield* server.turns).length).toBe(3)
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)
  it.live("a run started on a full disk → answers, logs once, and stores once space returns", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const disk = yield* smallMemory(box)
      box.writeMemory("history.jsonl", answered(["before", "re: before"]))
      // No process to limit yet: a tmpfs is filled now, a file size limit right after the start.
      if (disk.kind === "tmpfs") disk.fill(0, 0)
      const server = yield* brainServer(echo)
      const proc = yield* planckclaw(box, ["run"], box.envWith({ ANTHROPIC_BASE_URL: server.url }))
      if (disk.kind === "rlimit") disk.fill(proc.pid, 0)
      yield* proc.write("first\n")
      expect(yield* proc.awaitLines(1)).toEqual(["re: first"])
      expect(occurrences(proc.stderr(), FAILURE), proc.stderr()).toBe(1)
      expect((yield* server.turns)[0]!.body.messages).toEqual([
        { role: "user", content: "before" },
        { role: "assistant", content: "re: before" },
        { role: "user", content: "first" }
      ])
      disk.free(proc.pid)
      yield* proc.write("second\n")
      yield* proc.awaitLines(2)
      yield* proc.closeInput
      expect((yield* proc.ended).code, proc.stderr()).toBe(0)
      expect(box.memoryFile("history.jsonl")).toBe(
        answered(["before", "re: before"], ["first", "re: first"], ["second", "re: second"])
      )
      expect(box.memoryFile(".inbox.jsonl")).toBe("")
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)
})
