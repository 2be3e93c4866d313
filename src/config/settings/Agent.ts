/** The agent's turn, its logging and V8 tuning, and the runtime directory of its six pipes. */
import type { NumberSetting, SwitchSetting, TextSetting } from "../Setting.js"

export const MaxToolRounds = {
  key: "PLANCKCLAW_MAX_TOOL_ROUNDS",
  kind: "integer",
  min: 1,
  max: 100,
  default: 8,
  description: "tool rounds per turn",
  perAgent: true
} as const satisfies NumberSetting

export const MaxMessageBytes = {
  key: "PLANCKCLAW_MAX_MESSAGE_BYTES",
  kind: "integer",
  min: 1,
  // An interact line is at most 1 MiB (Wire.defaultMaxLineBytes): a larger limit could never apply.
  max: 1024 * 1024,
  default: 64 * 1024,
  description: "largest accepted message, in bytes; a larger one is refused with a reply",
  details: "over `serve`'s HTTP API, a 413 `too-large`. There the host's value caps every agent's and bounds each route's body " +
    "([serve](serve.md#the-http-api)); an agent's own `config.env` may only lower it",
  perAgent: true
} as const satisfies NumberSetting

export const Debug = {
  key: "PLANCKCLAW_DEBUG",
  kind: "switch",
  default: false,
  description: "1: brain payloads and HTTP statuses on stderr (as --debug); the key is never printed"
} as const satisfies SwitchSetting

export const Events = {
  key: "PLANCKCLAW_EVENTS",
  kind: "switch",
  default: true,
  description: "1: a run's interact and brain bridges (an executable it starts, which gets PLANCKCLAW_EVENTS=1, or a process " +
    "on the pipes of a --bridge none or --brain none run) are offered the turns' events (text as it is written, tool calls); " +
    "0: none is offered them",
  details: "it opts in as [the pipes](pipes.md#streaming-events-opt-in) say; the original's bridges never do"
} as const satisfies SwitchSetting

export const V8Pretenuring = {
  key: "PLANCKCLAW_V8_PRETENURING",
  kind: "switch",
  default: false,
  description: "1: keep V8's allocation-site pretenuring (run and serve turn it off once started)",
  details: "see [Performance](performance.md)"
} as const satisfies SwitchSetting

export const V8EarlyTierUp = {
  key: "PLANCKCLAW_V8_EARLY_TIER_UP",
  kind: "switch",
  default: false,
  description:
    "1: run and serve have V8 optimise four times sooner for their first 2.5 s of CPU (10 minutes at most)",
  details: "less CPU per turn while young, but a longer p99 tail on Node 22 and 24; see [Performance](performance.md)"
} as const satisfies SwitchSetting

export const V8YoungGenerationCap = {
  key: "PLANCKCLAW_V8_YOUNG_GENERATION_CAP",
  kind: "switch",
  default: true,
  description: "0: let V8 grow its young generation as far as its version does (on Node 24, run and serve stop it at 16 MiB)",
  details: "a long run holds less memory (on Node 24, 101 MiB against 148 after 30,000 turns); see [Performance](performance.md)"
} as const satisfies SwitchSetting

export const RunDir = {
  key: "PLANCKCLAW_RUN_DIR",
  kind: "text",
  accepts: "directory, private to you",
  default: "/tmp/planckclaw",
  defaultText: "/tmp/planckclaw for ~/.planckclaw; for another home, planckclaw-NAME-TAG in TMPDIR (/tmp), its own",
  description: "runtime directory of the six named pipes",
  details: "see [The home](#the-home)",
  path: true
} as const satisfies TextSetting

const pipe = <const Key extends string>(key: Key, name: string) => ({
  key,
  kind: "text",
  accepts: "path",
  defaultText: `${name} in PLANCKCLAW_RUN_DIR`,
  description: `the ${name} pipe alone, elsewhere (what an external bridge is given); set by hand only to move that one pipe`,
  path: true
} as const satisfies TextSetting)

/** One pipe each, by FifoPaths' names; unset, each is in the runtime directory. */
export const PipePaths = {
  interactIn: pipe("PLANCKCLAW_INTERACT_IN", "interact_in"),
  interactOut: pipe("PLANCKCLAW_INTERACT_OUT", "interact_out"),
  brainIn: pipe("PLANCKCLAW_BRAIN_IN", "brain_in"),
  brainOut: pipe("PLANCKCLAW_BRAIN_OUT", "brain_out"),
  clawIn: pipe("PLANCKCLAW_CLAW_IN", "claw_in"),
  clawOut: pipe("PLANCKCLAW_CLAW_OUT", "claw_out")
} as const

export const group = {
  title: "Agent",
  settings: [
    MaxToolRounds,
    MaxMessageBytes,
    Debug,
    Events,
    V8Pretenuring,
    V8EarlyTierUp,
    V8YoungGenerationCap,
    RunDir,
    PipePaths.interactIn,
    PipePaths.interactOut,
    PipePaths.brainIn,
    PipePaths.brainOut,
    PipePaths.clawIn,
    PipePaths.clawOut
  ]
} as const
