/**
 * `planckclaw help [TOPIC]`: a command's help, the overview, or every
 * configuration key (`help config`). bin/planckclaw prints it without
 * loading the command line (see its figures); this is the command the
 * command line itself runs when that quick answer hands a line on.
 */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as HelpText from "../HelpText.js"

/** A help topic no entry has: a usage mistake, exit 2 (Main.ts). */
export class HelpTopicUnknown extends Data.TaggedError("HelpTopicUnknown")<{ readonly message: string }> {}

export const help = Command.make(
  "help",
  { topic: Argument.String("TOPIC").pipe(Argument.withDescription(HelpText.describe("help", "TOPIC")), Argument.optional) },
  ({ topic }) => {
    const answer = HelpText.answer(["help", ...Option.toArray(topic)], { version: "", color: HelpText.colorAllowed(process.stdout) })
    if (answer._tag !== "Print") return Effect.void
    return answer.code === 0
      ? Console.log(answer.text)
      : Effect.fail(new HelpTopicUnknown({ message: answer.text.replace(/^planckclaw: /, "") }))
  }
).pipe(Command.withDescription(HelpText.summary("help")))
