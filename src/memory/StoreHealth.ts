/**
 * Whether storing memory is failing (a full disk): logged once when it
 * starts, once when it ends, so a full disk is not one error per turn.
 */
import * as Effect from "effect/Effect"
import { MemoryError } from "./MemoryFiles.js"
import * as SafeFile from "../runtime/SafeFile.js"

export interface StoreHealth {
  /** Whether the last write to memory failed (a full disk). */
  readonly storageFailing: Effect.Effect<boolean>
  /** A write failure is logged once, with the free space, until a write succeeds again. */
  readonly storeFailed: (error: MemoryError) => Effect.Effect<never, MemoryError>
  readonly storeWorked: Effect.Effect<void>
}

export const make = (directory: string): StoreHealth => {
  let storageFailing = false
  const storeFailed = (error: MemoryError) =>
    Effect.suspend(() => {
      const again = new MemoryError({ reason: error.reason, message: error.message, cause: error.cause, reported: true })
      if (storageFailing) return Effect.fail(again)
      storageFailing = true
      const free = SafeFile.freeBytes(directory)
      return Effect.logError(
        `cannot store exchanges: ${error.message}; ${free === undefined ? "free space unknown" : `${free} bytes free`} ` +
          `on the filesystem of ${directory}. Replies are still sent; unstored exchanges wait in the inbox journal ` +
          "and are stored once writing works again (logged once)"
      ).pipe(Effect.andThen(Effect.fail(again)))
    })

  const storeWorked = Effect.suspend(() => {
    if (!storageFailing) return Effect.void
    storageFailing = false
    return Effect.logInfo(`memory in ${directory} is writable again`)
  })

  return { storageFailing: Effect.sync(() => storageFailing), storeFailed, storeWorked }
}
