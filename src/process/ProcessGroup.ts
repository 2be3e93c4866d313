/** Signals to whole process groups: a claw or bridge and everything it started. */
import * as Either from "effect/Either"

/** Signals the group led by `pgid`; a group that is already gone (ESRCH) is fine. */
export const signalGroup = (pgid: number, signal: NodeJS.Signals): void => {
  Either.try(() => process.kill(-pgid, signal))
}
