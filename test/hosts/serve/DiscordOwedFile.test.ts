/**
 * The file of Discord messages `serve` owes a reply, on a real directory:
 * what is owed survives a reopen in order, a reply journaled is owed no
 * more, a torn last line is cut off, the file is rewritten once mostly done
 * lines, and a planted link is refused rather than followed.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import * as DiscordOwedFile from "../../../src/hosts/serve/DiscordOwedFile.js"

const directory = () => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-owed-"))
const fileIn = (dir: string) => path.join(dir, DiscordOwedFile.FILE)

const message = (id: string, extra: Partial<Discord.DiscordMessage> = {}): Discord.DiscordMessage => ({
  channel: "300000000000000001",
  kind: "channel",
  guildId: "200000000000000001",
  authorId: "400000000000000001",
  authorName: "Alice",
  text: `message ${id}`,
  target: { _tag: "Message", messageId: id },
  ...extra
})

const slash: Discord.DiscordMessage = message("s", {
  kind: "direct",
  guildId: undefined,
  text: "/usage",
  target: { _tag: "Interaction", applicationId: "1", interactionId: "900000000000000001", token: "interaction-token" }
})

describe("DiscordOwedFile", () => {
  it.effect("keeps what is owed across a reopen, oldest first; a journaled reply is owed no more", () =>
    Effect.gen(function*() {
      const dir = directory()
      const owed = yield* DiscordOwedFile.make(dir)
      yield* owed.record(message("1"))
      yield* owed.record(slash)
      yield* owed.record(message("3"))
      // Handed over again (after a restart): noted once.
      yield* owed.record(message("1"))
      yield* owed.done(slash)
      const again = yield* DiscordOwedFile.make(dir)
      expect(yield* again.pending).toEqual([message("1"), message("3")])
      yield* again.done(message("1"))
      yield* again.done(message("1"))
      expect(yield* (yield* DiscordOwedFile.make(dir)).pending).toEqual([message("3")])
      expect(fs.statSync(fileIn(dir)).mode & 0o777).toBe(0o600)
    }))

  it.effect("keeps a slash command with its interaction, and cuts a torn last line off", () =>
    Effect.gen(function*() {
      const dir = directory()
      const owed = yield* DiscordOwedFile.make(dir)
      yield* owed.record(slash)
      fs.appendFileSync(fileIn(dir), "{\"owed\":{\"channel\":\"3")
      expect(yield* (yield* DiscordOwedFile.make(dir)).pending).toEqual([slash])
      expect(fs.readFileSync(fileIn(dir), "utf8").endsWith("\n")).toBe(true)
    }))

  it.effect("is rewritten with what is still owed once done lines outnumber it by a thousand", () =>
    Effect.gen(function*() {
      const dir = directory()
      const owed = yield* DiscordOwedFile.make(dir)
      yield* owed.record(message("kept"))
      for (let n = 0; n < 600; n++) {
        yield* owed.record(message(`m${n}`))
        yield* owed.done(message(`m${n}`))
      }
      const lines = fs.readFileSync(fileIn(dir), "utf8").split("\n").filter((line) => line !== "")
      expect(lines.length).toBeLessThan(300)
      expect(yield* (yield* DiscordOwedFile.make(dir)).pending).toEqual([message("kept")])
    }))

  it.effect("refuses a link planted as its file, and a message it cannot note is refused", () =>
    Effect.gen(function*() {
      const dir = directory()
      const elsewhere = path.join(dir, "elsewhere")
      fs.writeFileSync(elsewhere, "")
      fs.symlinkSync(elsewhere, fileIn(dir))
      const opened = yield* Effect.flip(DiscordOwedFile.make(dir))
      expect(opened.message).toContain("symbolic link")
      fs.unlinkSync(fileIn(dir))
      const owed = yield* DiscordOwedFile.make(dir)
      fs.symlinkSync(elsewhere, fileIn(dir))
      const refused = yield* Effect.flip(owed.record(message("1")))
      expect(refused.message).toContain("cannot note the message")
      expect(fs.readFileSync(elsewhere, "utf8")).toBe("")
    }))
})
