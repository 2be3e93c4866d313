/**
 * One function of node:fs replaced for the test's scope, as the code under
 * test sees it (its `import * as fs` too: syncBuiltinESMExports), and put
 * back when the scope closes. For interleaving another process's steps at
 * an exact instant of the code under test.
 */
import fsModule from "node:fs"
import { syncBuiltinESMExports } from "node:module"
import { Effect } from "effect"
import type * as Scope from "effect/Scope"

type FsFunction = "readlinkSync" | "readFileSync" | "writeSync" | "unlinkSync"

/** `fs[name]` is `replace(real)` for the scope: `replace` gets the real one to call through. */
export const patchFs = <K extends FsFunction>(
  name: K,
  replace: (real: (typeof fsModule)[K]) => (typeof fsModule)[K]
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const real = fsModule[name]
      fsModule[name] = replace(real)
      syncBuiltinESMExports()
      return real
    }),
    (real) =>
      Effect.sync(() => {
        fsModule[name] = real
        syncBuiltinESMExports()
      })
  )
