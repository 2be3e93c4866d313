/**
 * The records routes (HttpApiRecords): an agent's history pages and the
 * usage ledgers, read by the host without starting the agent. A host that
 * keeps no such records (an AgentHost made without them) answers 503 naming the route.
 */
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { AgentHost } from "./AgentHost.js"
import { HISTORY_LIMIT_DEFAULT } from "./AgentRecords.js"
import { Api } from "./HttpApiDefinition.js"
import * as Errors from "./HttpApiErrors.js"

const notKept = (what: string) =>
  Effect.fail(new Errors.ServiceUnavailable({ error: "unavailable", message: `this host does not serve ${what}` }))

export const group = HttpApiBuilder.group(Api, "records", Effect.fnUntraced(function*(handlers) {
  const host = yield* AgentHost
  return handlers
    .handle("history", ({ params, query }) =>
      host.history === undefined ? notKept("history pages") : Effect.catch(
        host.history(params.id, {
          before: query.before === undefined ? undefined : Number(query.before),
          limit: query.limit === undefined ? HISTORY_LIMIT_DEFAULT : Number(query.limit)
        }),
        Errors.fromHostAmong(Errors.GetErrors)
      ))
    .handle("usage", ({ params, query }) =>
      host.usage === undefined ? notKept("usage") : Effect.catch(host.usage(params.id, query), Errors.fromHostAmong(Errors.GetErrors)))
    .handle("memory", ({ params }) =>
      host.memory === undefined ? notKept("soul and summary") : Effect.catch(host.memory(params.id), Errors.fromHostAmong(Errors.GetErrors)))
    .handle("schedules", ({ params }) =>
      host.schedules === undefined ? notKept("schedules") : Effect.catch(host.schedules(params.id), Errors.fromHostAmong(Errors.GetErrors)))
    .handle("usageAll", ({ query }) =>
      host.usageAll === undefined ? notKept("usage") : Effect.catch(host.usageAll(query), Errors.fromHostAmong(Errors.ListErrors)))
}))
