import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Fiber, Option, Queue, Stream } from "effect"
import { BrainError } from "../../src/ports/Brain.js"
import { CANCELLED, cancelFor, type OutboundMessage } from "../../src/ports/Interact.js"
import * as BrainFifo from "../../src/pipes/FifoBrain.js"
import * as Scripted from "../../src/brain/ScriptedBrain.js"
import * as ClawsFifo from "../../src/pipes/FifoClaws.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { oversizedReplyNotice, serveBrain, serveClaws, serveInteract } from "../../src/pipes/Serve.js"
import * as InteractFifo from "../../src/pipes/FifoInteract.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import { blocksFrom, sh, tempDir } from "../support/FifoKit.js"
import { captureLogs } from "../support/LogCapture.js"

const runtime = Effect.flatMap(tempDir, (dir) => makeRuntimeDir(path.join(dir, "run")))

describe("serveBrain", () => {
  it.effect("answers a shell agent's request frame with the brain's response", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const scripted = yield* Scripted.make([Scripted.text("Hello from the brain")])
      yield* Effect.forkScoped(serveBrain(scripted.service, paths))
      // What the original agent does: one frame in, read lines up to the empty one.
      const answer = yield* sh(
        `printf '%s\\n\\n' "$REQ" > "$IN"; while IFS= read -r l; do [ -z "$l" ] && break; printf '%s' "$l"; done < "$OUT"`,
        {
          IN: paths.brainIn,
          OUT: paths.brainOut,
          REQ: "{\"model\":\"m\",\"max_tokens\":9,\"metadata\":{\"user_id\":\"u\"},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
        }
      )
      expect(JSON.parse(answer)).toEqual({ content: [{ type: "text", text: "Hello from the brain" }], stop_reason: "end_turn" })
      expect(yield* scripted.requests).toEqual([
        { model: "m", max_tokens: 9, metadata: { user_id: "u" }, messages: [{ role: "user", content: "hi" }] }
      ])
    }))

  it.effect("answers {\"error\":…} for a failed brain or a bad request, one answer per request", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const scripted = yield* Scripted.make([
        new BrainError({ reason: "timeout", detail: "upstream slow" }),
        new BrainError({ reason: "fatal", detail: "upstream broken" }),
        Scripted.text("fine again")
      ])
      yield* Effect.forkScoped(serveBrain(scripted.service, paths))
      const requests = yield* openWriter(paths.brainIn)
      const answers = yield* blocksFrom(paths.brainOut)
      const ask = (frame: string) => Effect.andThen(requests.write(frame), Queue.take(answers))
      const good = "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[]}\n\n"
      expect(yield* ask(good)).toBe("{\"error\":\"timeout\"}")
      expect(yield* ask("not json at all\n\n")).toBe("{\"error\":\"fatal\"}")
      expect(yield* ask("{\"model\":\"m\"}\n\n")).toBe("{\"error\":\"fatal\"}")
      expect(yield* ask(good)).toBe("{\"error\":\"fatal\"}")
      expect(JSON.parse(yield* ask(good)).content[0].text).toBe("fine again")
    }))

  it.effect("serves the FIFO brain client end to end", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const scripted = yield* Scripted.make([
        Scripted.toolUse([{ id: "t1", name: "echo", input: { text: "x" } }], "Let me check."),
        new BrainError({ reason: "timeout", detail: "slow" })
      ])
      yield* Effect.forkScoped(serveBrain(scripted.service, paths))
      const brain = yield* BrainFifo.make({ paths })
      const request = { model: "m", max_tokens: 10, messages: [{ role: "user" as const, content: "go" }] }
      expect(yield* brain.complete(request)).toEqual(
        Scripted.toolUse([{ id: "t1", name: "echo", input: { text: "x" } }], "Let me check.")
      )
      expect((yield* Effect.flip(brain.complete(request))).reason).toBe("timeout")
    }))
})

describe("serveClaws", () => {
  const tools: ReadonlyArray<InMemoryClaws.InMemoryTool> = [
    {
      definition: { name: "report", description: "Multi-line output", input_schema: { type: "object" } },
      run: () => Effect.succeed({ content: "Title\r\n\r\nBody line\n\n\nEnd\n", isError: false })
    },
    {
      definition: { name: "broken", description: "Always fails", input_schema: { type: "object" } },
      run: () => Effect.succeed({ content: "disk full", isError: true })
    },
    {
      definition: { name: "echo", description: "Echo", input_schema: { type: "object" } },
      run: (input) => Effect.succeed({ content: JSON.stringify(input), isError: false })
    }
  ]

  it.effect("serves the FIFO claws client end to end, empty lines in results included", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      yield* Effect.forkScoped(serveClaws(InMemoryClaws.make(tools), paths))
      const claws = yield* ClawsFifo.make({ paths })
      expect((yield* claws.list).tools.map((tool) => tool.name)).toEqual(["report", "broken", "echo"])
      expect(yield* claws.call("report", {})).toEqual({ content: "Title\n\nBody line\n\n\nEnd", isError: false })
      expect(yield* claws.call("broken", {})).toEqual({ content: "Error: disk full", isError: true })
      expect(yield* claws.call("missing", {})).toEqual({ content: "Unknown tool: missing", isError: true })
      expect(yield* claws.call("echo", { a: [1, "two"] })).toEqual({ content: "{\"a\":[1,\"two\"]}", isError: false })
    }))

  it.effect("answers an original agent's requests, and a malformed one with an error", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      yield* Effect.forkScoped(serveClaws(InMemoryClaws.make(tools), paths))
      const requests = yield* openWriter(paths.clawIn)
      const answers = yield* blocksFrom(paths.clawOut)
      yield* requests.write("__list_tools__\n")
      expect(JSON.parse(yield* Queue.take(answers)).map((tool: { name: string }) => tool.name)).toEqual(["report", "broken", "echo"])
      // An empty line is no request: it gets no answer, so the next answer is the next request's.
      yield* requests.write("\nno tab here\necho\t{\"k\":true}\n")
      expect(yield* Queue.take(answers)).toContain("Error: claw request is neither")
      expect(yield* Queue.take(answers)).toBe("{\"k\":true}")
    }))
})

describe("serveInteract", () => {
  it.effect("carries messages to the agent and replies back, and ends once input ended and every reply was delivered", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const user = yield* InMemoryInteract.make
      const agentSide = yield* InteractFifo.make({ paths })
      yield* user.offer({ channel: "cli", text: "first\nmessage" })
      yield* user.offer({ channel: "cli", text: "second" })
      yield* user.end
      const serving = yield* Effect.forkScoped(serveInteract(user.service, paths))

      const inbound = yield* agentSide.messages.pipe(Stream.take(2), Stream.runCollect)
      expect([...inbound]).toEqual([{ channel: "cli", text: "first\nmessage" }, { channel: "cli", text: "second" }])

      yield* agentSide.send({ channel: "cli", text: "answer\tone" })
      expect(yield* Queue.take(user.replies)).toEqual({ channel: "cli", text: "answer\tone" })
      // One reply is still owed: the bridge keeps running.
      yield* Effect.yieldNow
      expect(serving.pollUnsafe()).toBeUndefined()

      yield* agentSide.send({ channel: "cli", text: "answer two" })
      expect(yield* Queue.take(user.replies)).toEqual({ channel: "cli", text: "answer two" })
      yield* Fiber.join(serving)
    }))

  it.effect("a bridge process does not count the replies waiting in interact_out when it came: it shows them, and ends after its own", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const user = yield* InMemoryInteract.make
      const agentSide = yield* InteractFifo.make({ paths })
      // Written before this bridge came (a killed bridge's, or kept from the last run): no answer to its message.
      yield* agentSide.send({ channel: "cli", text: "an older answer" })
      yield* user.offer({ channel: "cli", text: "mine" })
      yield* user.end
      const serving = yield* Effect.forkScoped(serveInteract(user.service, paths))
      const inbound = yield* agentSide.messages.pipe(Stream.take(1), Stream.runCollect)
      expect([...inbound]).toEqual([{ channel: "cli", text: "mine" }])
      expect((yield* Queue.take(user.replies)).text).toBe("an older answer")
      yield* agentSide.send({ channel: "cli", text: "my answer" })
      yield* Fiber.join(serving)
      expect(yield* Queue.poll(user.replies)).toEqual(Option.some({ channel: "cli", text: "my answer" }))
    }))

  it.effect("carries a cancel as its line, and owes no reply for it: a bridge process ends once the message is answered", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const user = yield* InMemoryInteract.make
      const agentSide = yield* InteractFifo.make({ paths })
      yield* user.offer({ channel: "cli", text: "long task" })
      yield* user.offer(cancelFor("cli"))
      yield* user.end
      const serving = yield* Effect.forkScoped(serveInteract(user.service, paths))
      const inbound = yield* agentSide.messages.pipe(Stream.take(2), Stream.runCollect)
      expect([...inbound]).toEqual([{ channel: "cli", text: "long task" }, cancelFor("cli")])
      yield* agentSide.send({ channel: "cli", text: CANCELLED })
      expect((yield* Queue.take(user.replies)).text).toBe(CANCELLED)
      yield* Fiber.join(serving)
    }))

  it.effect("a bridge that dies delivering a reply has it logged, and delivers the next one: serving goes on to its end", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const logs = yield* captureLogs
      const user = yield* InMemoryInteract.make
      // As the terminal did, drawing its prompt on a readline Ctrl-D had closed.
      const dying = {
        ...user.service,
        send: (reply: OutboundMessage) =>
          reply.text === "first answer" ? Effect.die(new Error("readline was closed")) : user.service.send(reply)
      }
      const agentSide = yield* InteractFifo.make({ paths })
      yield* user.offer({ channel: "cli", text: "first" })
      yield* user.offer({ channel: "cli", text: "second" })
      yield* user.end
      const serving = yield* Effect.forkScoped(serveInteract(dying, paths).pipe(Effect.provide(logs.layer)))
      yield* agentSide.messages.pipe(Stream.take(2), Stream.runDrain)
      yield* agentSide.send({ channel: "cli", text: "first answer" })
      yield* agentSide.send({ channel: "cli", text: "second answer" })
      expect((yield* Queue.take(user.replies)).text).toBe("second answer")
      yield* Fiber.join(serving)
      expect(logs.lines.filter((line) => line.startsWith("ERROR"))).toEqual([
        expect.stringContaining("reply to cli not delivered: the bridge failed on an internal error")
      ])
    }))

  it.effect("shows a reply longer than a message line may be: the agent writes what its brain answered, whole", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const user = yield* InMemoryInteract.make
      const agentSide = yield* InteractFifo.make({ paths })
      yield* user.offer({ channel: "cli", text: "write me a book" })
      yield* user.end
      const serving = yield* Effect.forkScoped(serveInteract(user.service, paths))
      yield* agentSide.messages.pipe(Stream.take(1), Stream.runDrain)
      // Past the 1 MiB of a message line once escaped (each line break takes two bytes).
      const book = "a line of the book\n".repeat(60_000)
      yield* agentSide.send({ channel: "cli", text: book })
      expect(yield* Queue.take(user.replies)).toEqual({ channel: "cli", text: book })
      yield* Fiber.join(serving)
    }))

  it.effect("tells a channel of a reply line too long to read instead of dropping it unsaid, and goes on", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const user = yield* InMemoryInteract.make
      const agentSide = yield* InteractFifo.make({ paths })
      yield* user.offer({ channel: "cli", text: "first" })
      yield* user.offer({ channel: "cli", text: "second" })
      yield* user.end
      const serving = yield* Effect.forkScoped(serveInteract(user.service, paths, { maxRequestBytes: 64 }))
      yield* agentSide.messages.pipe(Stream.take(2), Stream.runDrain)
      yield* agentSide.send({ channel: "cli", text: "x".repeat(100) })
      yield* agentSide.send({ channel: "cli", text: "short" })
      expect(yield* Queue.take(user.replies)).toEqual({ channel: "cli", text: oversizedReplyNotice(64) })
      expect(yield* Queue.take(user.replies)).toEqual({ channel: "cli", text: "short" })
      // Both count as the replies owed: the bridge process ends.
      yield* Fiber.join(serving)
    }))
})
