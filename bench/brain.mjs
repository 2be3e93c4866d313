/**
 * An external brain bridge for the benches (`planckclaw run --brain …`):
 * answers every brain_in frame at once on brain_out (see lib/fifo.mjs).
 * Node rather than sh, so the figure is the agent's and not fork/exec's.
 */
import { serveBrain } from "./lib/fifo.mjs"

serveBrain({ brainIn: process.env.PLANCKCLAW_BRAIN_IN, brainOut: process.env.PLANCKCLAW_BRAIN_OUT })
