/**
 * Whether the home a start would use has an mcp.json (or the file
 * PLANCKCLAW_MCP_CONFIG names, in the environment or config.env): read
 * synchronously before a run starts, so that a run with MCP servers starts
 * from the bundle that holds the MCP client (RunMain's `started`), and a run
 * without them does not load it at all. A wrong guess is safe one way
 * only: present here and empty is a slower start, never a missing client.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Result from "effect/Result"
import * as ConfigFile from "../../config/ConfigFile.js"
import * as Home from "../../config/Home.js"
import { McpConfig } from "../../config/settings/Claws.js"

export const mcpConfigPresent = (
  environment: Record<string, string | undefined> = process.env,
  cwd: string = process.cwd()
): boolean => {
  const named = environment[McpConfig.key]
  if (named !== undefined && named !== "") return fs.existsSync(path.resolve(cwd, named))
  const home = Home.locate(environment, cwd)
  const text = Result.try(() => fs.readFileSync(Home.configFile(home), "utf8"))
  const fromFile = Result.isSuccess(text)
    ? Result.getOrUndefined(Result.map(ConfigFile.parse(text.success, "config.env", environment), (values) => values.get(McpConfig.key)))
    : undefined
  // config.env that cannot be parsed: the run will refuse it, from whichever bundle; say present, the safe guess.
  if (Result.isSuccess(text) && Result.isFailure(ConfigFile.parse(text.success, "config.env", environment))) return true
  return fs.existsSync(fromFile !== undefined && fromFile !== "" ? path.resolve(home.dir, fromFile) : path.join(home.dir, "mcp.json"))
}
