/**
 * A pid file of the runtime directory that names this process (the run's
 * `planckclaw.pid`, a bridge's claim): written once with O_EXCL, under its
 * guard (ClaimGuard), and removed at the end only while it still names us,
 * since one taken over meanwhile (we looked dead to another) is another's.
 */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"
import { errnoCode } from "../runtime/Errors.js"
import { attempt, ignoringMissing } from "./RuntimeDirChecks.js"
import type { RuntimeDirError } from "./RuntimeDirError.js"

/** Writes our pid to `file` with O_EXCL; false when the file is there already. */
export const writeOwnPid = (file: string): Effect.Effect<boolean, RuntimeDirError> =>
  attempt(`cannot write ${file}`, () => fs.writeFileSync(file, `${process.pid}\n`, { flag: "wx", mode: 0o600 })).pipe(
    Effect.as(true),
    Effect.catch((error) =>
      errnoCode(error.cause) === "EEXIST"
        ? Effect.succeed(false)
        // Made, then cut short (a full disk): no empty pid file is left behind.
        : Effect.andThen(Effect.ignore(attempt("unlink", () => fs.unlinkSync(file))), Effect.fail(error)))
  )

/**
 * Removes `file` if `owner`, the pid it names, is ours; a failure is logged,
 * not raised. The caller reads it: the run's pid file warns when it cannot
 * be read, a bridge's claim is read like any pid file (PidFile).
 */
export const releaseIfOurs = (file: string, owner: Effect.Effect<number | undefined, RuntimeDirError>): Effect.Effect<void> =>
  owner.pipe(
    Effect.flatMap((pid) => pid === process.pid ? attempt(`cannot remove ${file}`, () => fs.unlinkSync(file)) : Effect.void),
    ignoringMissing,
    Effect.catch((error) => Effect.logWarning(error.message))
  )
