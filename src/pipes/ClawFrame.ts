/**
 * claw_in: `__list_tools__\n` or `{name}\t{input_json}\n`. claw_out: the
 * answer, then an empty line. An answer never holds an empty line on the
 * wire: CR LF and lone CR become LF, trailing newlines are dropped, and every
 * empty line (an empty answer included) is sent as a line holding a single
 * space, which the reader turns back into an empty line. Pure codec.
 */
import * as Data from "effect/Data"
import * as Result from "effect/Result"
import { MalformedMessage, compactJson, excerpt } from "../runtime/Framing.js"

export const listToolsCommand = "__list_tools__"
export const listToolsRequest = `${listToolsCommand}\n`

export type ClawRequest = Data.TaggedEnum<{
  ListTools: {}
  Call: { readonly name: string; readonly input: unknown }
}>
export const ClawRequest = Data.taggedEnum<ClawRequest>()

// Taken once: each property read of the tagged enum goes through a Proxy
// that makes a new constructor, and a listing arrives with every message.
const listTools: ClawRequest = ClawRequest.ListTools()
const call = ClawRequest.Call

/** `{name}\t{input_json}\n` with the input as compact one-line JSON. */
export const encodeClawCall = (name: string, input: unknown): Result.Result<string, MalformedMessage> =>
  name === "" || /[\t\r\n]/.test(name)
    ? Result.fail(new MalformedMessage({ message: `tool name ${JSON.stringify(name)} cannot be framed` }))
    : Result.map(compactJson(input ?? {}), (json) => `${name}\t${json}\n`)

/**
 * Decodes one claw_in line (without its `\n`). A trailing CR is tolerated;
 * an empty input stands for `{}`.
 */
export const decodeClawRequest = (rawLine: string): Result.Result<ClawRequest, MalformedMessage> => {
  const line = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine
  if (line === listToolsCommand) return Result.succeed(listTools)
  const tab = line.indexOf("\t")
  if (tab <= 0) {
    return Result.fail(new MalformedMessage({ message: `claw request is neither ${listToolsCommand} nor name<TAB>input: ${excerpt(line)}` }))
  }
  const name = line.slice(0, tab)
  const inputJson = line.slice(tab + 1).trim()
  if (inputJson === "") return Result.succeed(call({ name, input: {} }))
  return Result.map(
    Result.try({
      try: () => JSON.parse(inputJson) as unknown,
      catch: () => new MalformedMessage({ message: `input of tool ${name} is not JSON: ${excerpt(inputJson)}` })
    }),
    (input) => call({ name, input })
  )
}

/** The answer as it goes on claw_out, ending with the empty line. See the module comment. */
export const encodeClawAnswer = (text: string): string => {
  const normalized = text.replace(/\r\n?/g, "\n").replace(/\n+$/, "")
  return `${normalized.split("\n").map((line) => (line === "" ? " " : line)).join("\n")}\n\n`
}

/** Reverses `encodeClawAnswer` for a block read off claw_out. */
export const decodeClawAnswer = (block: string): string =>
  block.split("\n").map((line) => (line === " " ? "" : line)).join("\n")
