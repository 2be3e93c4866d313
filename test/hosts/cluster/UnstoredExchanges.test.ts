/**
 * An exchange a cluster agent's memory could not store (its statement
 * failed: here history refuses the line, as a database away past the
 * append's retries would fail it) waits in the running process, behind
 * which the agent's later exchanges wait too, until memory takes them. Its
 * reply is still recorded on its own (a redelivery would not run the turn
 * again), but once delivered nothing brings the message back: a release or
 * a restart loses the exchange, so its caller is told `stored: false`, as
 * docs/serve.md says of one kept only in the running process, and so is
 * every later caller while it waits ahead of theirs. Over a throwaway
 * PostgreSQL.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { BrainService } from "../../../src/ports/Brain.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import { usePostgres } from "../../support/Postgres.js"
import { freshDatabase, migrated } from "../../memory/sql/SqlKit.js"
import { entity, send } from "./EntityOverPostgres.js"

const server = usePostgres()

const brain: BrainService = {
  complete: (request) =>
    Effect.sync(() => {
      const last = request.messages[request.messages.length - 1]!
      return ScriptedBrain.text(`reply to ${typeof last.content === "string" ? last.content : ""}`)
    })
}

describe("an exchange a cluster agent could not store", () => {
  it.live("is answered stored: false though its reply is recorded, and so are the next while it waits; all are stored once memory takes them", () =>
    Effect.gen(function*() {
      const url = yield* Effect.flatMap(server, freshDatabase)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // History refuses the line of a message saying "refused" (an error that does not go away by waiting).
        yield* sql.unsafe(`CREATE FUNCTION refuse_line() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.content LIKE '%refused%' THEN RAISE EXCEPTION 'the test refuses this line'; END IF; RETURN NEW; END $$`)
        yield* sql.unsafe(`CREATE TRIGGER refuse_line BEFORE INSERT ON planckclaw_history FOR EACH ROW EXECUTE FUNCTION refuse_line()`)
        yield* Effect.gen(function*() {
          expect(yield* send("dan", "refused once", "k1")).toMatchObject({ reply: "reply to refused once", stored: false })
          // The next exchange waits behind it (history keeps its order).
          expect(yield* send("dan", "next", "k2")).toMatchObject({ reply: "reply to next", stored: false })
          // Both replies recorded on their own, as a redelivery needs them: that is not their exchanges on disk.
          const recorded = yield* sql<{ key: string }>`SELECT message_key AS key FROM planckclaw_cluster_turns ORDER BY message_key`
          expect(recorded.map((row) => row.key)).toEqual(["idem:k1", "idem:k2"])
          yield* sql.unsafe(`DROP TRIGGER refuse_line ON planckclaw_history`)
          expect(yield* send("dan", "last", "k3")).toMatchObject({ reply: "reply to last", stored: true })
        }).pipe(Effect.provide(entity(sql, brain)))
        const history = yield* sql<{ content: string }>`SELECT content FROM planckclaw_history WHERE agent_id = 'dan' ORDER BY seq`
        expect(history.map((row) => row.content)).toEqual([
          "refused once", "reply to refused once", "next", "reply to next", "last", "reply to last"
        ])
      }).pipe(Effect.provide(migrated(url)))
    }), 60_000)
})
