/**
 * The fault campaign's bound on every wait. End-to-end tests run on the
 * real clock; a wait that runs out fails the test naming what never
 * happened. Nothing is asserted about how long anything took.
 *
 * The waits themselves are Sandbox's; these fix their bound to `BOUND`
 * (Sandbox's default, 20 s, is for the bridge suites).
 */
import { Duration } from "effect"
import * as Sandbox from "../support/Sandbox.js"

export { WaitTimedOut } from "../support/Sandbox.js"

/** Generous: starting Node on a loaded two-core machine takes seconds. A bound, never a measurement. */
export const BOUND = Duration.seconds(60)

export const within = (what: string, bound: Duration.Input = BOUND) => Sandbox.within(what, bound)

/** Polls `probe` (a throw counts as "not yet") until it returns a value other than undefined. */
export const eventually = <A>(what: string, probe: () => A | undefined, bound: Duration.Input = BOUND) =>
  Sandbox.eventually(what, probe, bound)

/** Waits until `pid` is gone for good (ESRCH): a zombie counts as still there. */
export const gone = (what: string, pid: number) => Sandbox.gone(what, pid, BOUND)

/** The pid a claw or bridge wrote into `file`, once it has. */
export const pidIn = (file: string) => Sandbox.pidIn(file, BOUND)
