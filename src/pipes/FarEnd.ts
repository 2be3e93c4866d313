/**
 * What a far end, once started, gives the near end (FarEnd, InteractFarEnd),
 * and the services by which the near end finds each role's far end
 * (BrainEnd, ClawsEnd, InteractEnd). Apart from Bridges.ts because both it
 * and ExecutableEnd.ts make far ends, and so each reads in one sitting;
 * Bridges re-exports each name.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { AbandonRequests } from "./Abandon.js"
import type { FarEndExits } from "./Exchange.js"
import type { FifoError } from "./FifoPaths.js"
import type * as Handover from "./Handover.js"
import type { InteractError } from "../ports/Interact.js"

/** One far end, once started. */
export interface FarEnd {
  /**
   * Completes when the bridge is done on its own (an executable that exited
   * cleanly, a bridge process's interact input ended and answered); fails
   * when serving the pipes fails. A built-in bridge in a run, and `none`,
   * never complete: the run decides when it is over.
   */
  readonly done: Effect.Effect<void, FifoError | InteractError>
  /**
   * Where the near end hears that the far end's process exited, so what it
   * owed is not waited for (an executable bridge; see Exchange). A built-in
   * bridge and `none` never report one.
   */
  readonly exits: FarEndExits
  /** Where the near end gives up a request (a cancelled turn): a built-in bridge stops its work (Abandon). */
  readonly abandon: AbandonRequests
  /**
   * Whether it is offered the turns' events: `builtin`, a bridge of the run
   * that takes them (a brain streams when asked, FifoBrain); `announced`, an
   * executable started with PLANCKCLAW_EVENTS=1, which opts in itself
   * (docs/pipes.md). Absent: none, as the original's bridges expect.
   */
  readonly events?: "builtin" | "announced"
}

export interface InteractFarEnd extends FarEnd {
  /** Shared by a built-in interact bridge of a run with the agent (see Handover); none otherwise. */
  readonly handover: Option.Option<Handover.Handover>
}

export class BrainEnd extends Context.Service<BrainEnd, FarEnd>()("planckclaw/BrainEnd") {}
export class ClawsEnd extends Context.Service<ClawsEnd, FarEnd>()("planckclaw/ClawsEnd") {}
export class InteractEnd extends Context.Service<InteractEnd, InteractFarEnd>()("planckclaw/InteractEnd") {}
