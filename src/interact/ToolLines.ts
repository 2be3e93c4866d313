/**
 * Where a run's terminal writes a line per tool call when its standard
 * output is no terminal (`run --verbose`: stderr), so a script reading
 * stdout still gets the replies alone. Absent: no tool line is written
 * there. On a terminal the tool lines show dim among the text anyway.
 */
import * as Context from "effect/Context"

export class ToolLines extends Context.Service<ToolLines, NodeJS.WritableStream>()("planckclaw/ToolLines") {}
