/**
 * What a brain prints and logs, captured instead of shown, for tests that
 * check what the user (or a log reader) would see: never a secret.
 */
import { Console, Effect, FiberRef, HashSet, Logger, type Scope } from "effect"

/**
 * A Console that records what is written, plus a logger that records log
 * lines (the test environment removes the default one), as `stream: text`.
 */
export const captureConsole = (): Effect.Effect<Effect.Effect<ReadonlyArray<string>>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const record = (stream: string) => (...args: ReadonlyArray<unknown>) => {
      lines.push(`${stream}: ${args.map(String).join(" ")}`)
    }
    const recordEffect = (stream: string) => (...args: ReadonlyArray<unknown>) =>
      Effect.sync(() => record(stream)(...args))
    const ignore = () => Effect.void
    yield* Effect.withConsoleScoped<Console.Console>({
      [Console.TypeId]: Console.TypeId,
      assert: ignore,
      clear: Effect.void,
      count: ignore,
      countReset: ignore,
      debug: recordEffect("stdout"),
      dir: recordEffect("stdout"),
      dirxml: recordEffect("stdout"),
      error: recordEffect("stderr"),
      group: ignore,
      groupEnd: Effect.void,
      info: recordEffect("stdout"),
      log: recordEffect("stdout"),
      table: recordEffect("stdout"),
      time: ignore,
      timeEnd: ignore,
      timeLog: recordEffect("stdout"),
      trace: recordEffect("stderr"),
      warn: recordEffect("stderr"),
      unsafe: globalThis.console
    })
    yield* Effect.locallyScopedWith(
      FiberRef.currentLoggers,
      HashSet.add(Logger.make(({ logLevel, message }) => record(`log ${logLevel.label}`)(...[message].flat())))
    )
    return Effect.sync(() => [...lines])
  })
