/**
 * The console the command line prints through before a command runs
 * (effect/cli's completion script and wizard, CliAnswer's presenter): any
 * ANSI codes in its text are taken out when the stream is not a terminal or
 * NO_COLOR is set. Commands run with the ordinary console again
 * (CliSettings), so replies are never touched.
 */
import * as Console from "effect/Console"
import { colorAllowed } from "./HelpText.js"

// CSI sequences (colours, styles) and OSC sequences (titles, links).
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g

export const strip = (text: string): string => text.replace(ANSI, "")

const plain = (args: ReadonlyArray<unknown>, keep: boolean) =>
  keep ? args : args.map((arg) => (typeof arg === "string" ? strip(arg) : arg))

const originals = new WeakMap<Console.Console, Console.Console>()

/** The console `console` strips the codes of, or `console` itself. */
export const original = (console: Console.Console): Console.Console => originals.get(console) ?? console

export const make = (
  base: Console.Console,
  streams: { readonly stdout: { readonly isTTY?: boolean }; readonly stderr: { readonly isTTY?: boolean } } = process
): Console.Console => {
  const colorOut = colorAllowed(streams.stdout)
  const colorErr = colorAllowed(streams.stderr)
  const stripping: Console.Console = {
    ...base,
    log: (...args) => base.log(...plain(args, colorOut)),
    info: (...args) => base.info(...plain(args, colorOut)),
    error: (...args) => base.error(...plain(args, colorErr)),
    warn: (...args) => base.warn(...plain(args, colorErr))
  }
  originals.set(stripping, base)
  return stripping
}
