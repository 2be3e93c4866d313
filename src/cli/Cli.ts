/**
 * The command line: one effect/cli command tree, `planckclaw run | serve |
 * compact | tools | usage | bridge | init | doctor | memory | mcp | schedule | help`, one
 * file per command under commands/, each composing its own Layers from the
 * choices its flags make. Every line bin/planckclaw does not answer itself
 * (--version alone, the help: see its figures) is parsed by this tree.
 */
import * as Command from "effect/cli/Command"
import { bridge } from "./commands/BridgeCommand.js"
import { compact } from "./commands/CompactCommand.js"
import { doctor } from "./commands/doctor/DoctorCommand.js"
import { help } from "./commands/HelpCommand.js"
import { initCommand } from "./commands/InitCommand.js"
import { mcp } from "./commands/McpCommand.js"
import { memory } from "./commands/MemoryCommand.js"
import { run } from "./commands/RunCommand.js"
import { schedule } from "./commands/ScheduleCommand.js"
import { serve } from "./commands/ServeCommand.js"
import { tools } from "./commands/ToolsCommand.js"
import { usage } from "./commands/UsageCommand.js"

/** Every subcommand, in the order the help lists them. */
export const subcommands = [run, serve, compact, tools, usage, bridge, initCommand, doctor, memory, mcp, schedule, help] as const

/** The top command's description (the help people read is HelpText's overview). */
export const description =
  "A personal AI agent: terminal or Discord, Claude or any Chat Completions model, shell-script claws, self-compacting memory."

export const command = Command.make("planckclaw").pipe(
  Command.withDescription(description),
  Command.withSubcommands(subcommands)
)
