/**
 * Debian's chromium (/usr/bin/chromium, installed by .ci/run) driven by
 * playwright-core, for the web console's browser tests: a headless page in a
 * profile of its own, closed and removed with the scope.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { chromium, type Page } from "playwright-core"

export const CHROMIUM = "/usr/bin/chromium"

const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync"
]

/** A page of a new headless chromium. */
export const page = (options: { readonly viewport?: { readonly width: number; readonly height: number } } = {}) =>
  Effect.gen(function*() {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-chromium-"))
    const context = yield* Effect.acquireRelease(
      Effect.promise(() =>
        chromium.launchPersistentContext(profile, {
          executablePath: CHROMIUM,
          headless: true,
          args: FLAGS,
          ...(options.viewport === undefined ? {} : { viewport: { ...options.viewport } })
        })
      ),
      (context) => Effect.promise(() => context.close()).pipe(Effect.andThen(Effect.sync(() => fs.rmSync(profile, { recursive: true, force: true }))))
    )
    return context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
  })

/** A step of the page's, as an Effect. */
export const step = <A>(run: () => Promise<A>): Effect.Effect<A> => Effect.promise(run)

/** The texts of the log's lines (messages, tool lines, notes), in order. */
export const logLines = (page: Page) =>
  step(() => page.locator(".log > *").evaluateAll((elements) => elements.map((element) => element.textContent ?? "")))
