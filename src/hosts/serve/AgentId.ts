/**
 * An agent's id: the name of its directory under PLANCKCLAW_AGENTS_DIR, so
 * it must never name anything else (`.`, `..`, a path, a hidden file).
 */
import * as Data from "effect/Data"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

export const RULE = "[a-z0-9][a-z0-9._-]{0,63}"
const PATTERN = new RegExp(`^${RULE}$`)

/** Short, quoted and single-line: the refused id may be anything a client sent. */
const shown = (raw: string): string => JSON.stringify(raw.length > 80 ? `${raw.slice(0, 80)}…` : raw)

const refusal = (raw: string): string | undefined =>
  !PATTERN.test(raw)
    ? `agent id ${shown(raw)} is not allowed: an id must match ${RULE} (lowercase letters, digits, '.', '_', '-'; at most 64; starting with a letter or digit)`
    : undefined

export const AgentId = Schema.String.check(Schema.makeFilter((raw) => refusal(raw) ?? true)).pipe(Schema.brand("AgentId"))
export type AgentId = typeof AgentId.Type

export class AgentIdRefused extends Data.TaggedError("AgentIdRefused")<{
  readonly id: string
  readonly message: string
}> {}

/** The id, or why it is refused (naming the id and the rule). */
export const parse = (raw: string): Result.Result<AgentId, AgentIdRefused> => {
  const why = refusal(raw)
  return why === undefined ? Result.succeed(raw as AgentId) : Result.fail(new AgentIdRefused({ id: raw, message: why }))
}

export const is = (raw: string): raw is AgentId => refusal(raw) === undefined
