/**
 * An external claw bridge for the benches (`planckclaw run --claw …`): one
 * tool, get_time, answered at once, to time a tool round without fork/exec.
 */
import { serveClaws } from "./lib/fifo.mjs"

serveClaws({ clawIn: process.env.PLANCKCLAW_CLAW_IN, clawOut: process.env.PLANCKCLAW_CLAW_OUT })
