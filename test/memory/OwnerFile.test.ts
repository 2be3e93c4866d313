/**
 * Locks as hard links to this process's owner file (OwnerFile.ts): one
 * link(2) per lock, read like a lock file, falling back to a symbolic link
 * when no link can be made; owner files of dead processes are cleared.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, Exit, Scope } from "effect"
import * as FileLock from "../../src/memory/FileLock.js"
import * as OwnerFile from "../../src/memory/OwnerFile.js"
import { tempDir } from "../support/Sandbox.js"

/** The pid of a process that has already exited (and been reaped). */
const deadPid = () => spawnSync("true").pid!

const ownerName = `.planckclaw-owner-${process.pid}`

describe("OwnerFile", () => {
  it.effect("is made at its first use only, names this process, and is removed with its scope", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const scope = yield* Scope.make()
      const ownerFile = yield* Scope.provide(OwnerFile.onFirstUse(dir), scope)
      expect(fs.readdirSync(dir)).toEqual([])
      const file = ownerFile()!
      expect(file).toBe(path.join(dir, ownerName))
      expect(fs.readFileSync(file, "utf8")).toBe(`${process.pid}\n`)
      // Asked again: the same file, not a second one.
      expect(ownerFile()).toBe(file)
      yield* Scope.close(scope, Exit.void)
      expect(fs.readdirSync(dir)).toEqual([])
    }))

  it.effect("clears the owner files of dead processes, and keeps a live one's", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const dead = deadPid()
      fs.writeFileSync(path.join(dir, `.planckclaw-owner-${dead}`), `${dead}\n`)
      // The test runner (this process's parent) is alive, and started before its file was written.
      fs.writeFileSync(path.join(dir, `.planckclaw-owner-${process.ppid}`), `${process.ppid}\n`)
      const ownerFile = yield* OwnerFile.onFirstUse(dir)
      ownerFile()
      expect(fs.readdirSync(dir).sort()).toEqual([`.planckclaw-owner-${process.ppid}`, ownerName].sort())
    }))
})

describe("FileLock with an owner file", () => {
  it.effect("a lock is a hard link to the owner file: it names this process, and a live holder's is refused", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      fs.mkdirSync(path.join(dir, "agent"), { recursive: true })
      const ownerFile = (yield* OwnerFile.onFirstUse(dir))()!
      const lock = path.join(dir, "agent", ".planckclaw-write.lock")
      expect(Result.isSuccess(FileLock.tryTakeSync(lock, { link: true, ownerFile }))).toBe(true)
      expect(fs.lstatSync(lock).isFile()).toBe(true)
      expect(fs.statSync(lock).ino).toBe(fs.statSync(ownerFile).ino)
      expect(FileLock.ownerOf(lock)).toBe(process.pid)
      FileLock.releaseSync(lock)
      expect(fs.existsSync(lock)).toBe(false)
      // The owner file stays for the next lock.
      expect(fs.existsSync(ownerFile)).toBe(true)

      // Another live process's lock, a link to its owner file: refused with its pid.
      const other = path.join(dir, `.planckclaw-owner-${process.ppid}`)
      fs.writeFileSync(other, `${process.ppid}\n`)
      fs.linkSync(other, lock)
      const refused = FileLock.tryTakeSync(lock, { link: true, ownerFile })
      expect(Result.isFailure(refused) && refused.failure._tag === "LockHeld" ? refused.failure.ownerPid : undefined).toBe(process.ppid)
    }))

  it.effect("a dead process's linked lock is taken over; without a usable owner file the lock is a symbolic link", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const dead = deadPid()
      const deadOwner = path.join(dir, `.planckclaw-owner-${dead}`)
      fs.writeFileSync(deadOwner, `${dead}\n`)
      const lock = path.join(dir, ".planckclaw-run.lock")
      fs.linkSync(deadOwner, lock)
      const ownerFile = (yield* OwnerFile.onFirstUse(dir))()!
      const taken = FileLock.tryTakeSync(lock, { link: true, ownerFile })
      expect(Result.isSuccess(taken) && taken.success.clean).toBe(false)
      expect(fs.statSync(lock).ino).toBe(fs.statSync(ownerFile).ino)
      FileLock.releaseSync(lock)

      // The owner file removed by hand: the lock falls back to a symbolic link naming the pid.
      fs.unlinkSync(ownerFile)
      expect(Result.isSuccess(FileLock.tryTakeSync(lock, { link: true, ownerFile }))).toBe(true)
      expect(fs.readlinkSync(lock)).toBe(String(process.pid))
    }))
})
