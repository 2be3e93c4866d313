/**
 * What the terminal session says and answers to: its channel, the hint, the
 * prompts it shows besides `planckclaw> `, the /quit line of /help, and /quit
 * itself. Plain words, apart from TerminalInteract.ts so that file holds the
 * session alone and reads in one sitting.
 */

export const CHANNEL = "cli"
/** The question after the agent's answer to /forget; `y` sends `/forget confirm`. */
export const FORGET_QUESTION = "Archive it all and start afresh? [y/N] "
/** The prompt after a line ending with `\`: the message goes on. */
export const CONTINUATION = "... "
/** Said once when an interactive session starts. */
export const HINT = "PlanckClaw: /help for commands, /quit or Ctrl-D to leave. End a line with \\ to go on to the next."
/** The terminal's own command, added to the agent's /help. */
export const QUIT_HELP = "/quit            leave (or Ctrl-D)"

/** `/quit`, whatever the case and spaces around it. */
export const isQuit = (text: string) => text.trim().toLowerCase() === "/quit"
