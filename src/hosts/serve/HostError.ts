/**
 * What the agent host refuses or cannot do, with a `reason` callers branch
 * on (the HTTP API maps each to a status).
 */
import * as Data from "effect/Data"

export type HostErrorReason =
  /** The id breaks the rule of AgentId. */
  | "bad-id"
  /** The message is malformed: a channel or Idempotency-Key that is not allowed. */
  | "bad-input"
  /** A query the route cannot answer as asked: a history cursor inside a line. */
  | "bad-query"
  /** The message is over PLANCKCLAW_MAX_MESSAGE_BYTES. */
  | "too-large"
  /** No agent directory of that id (list, get, compact). */
  | "not-found"
  /** The agent could not be started: its directory, config.env or memory is refused, or another process holds it. */
  | "unavailable"
  /** Another compaction holds the agent's memory. */
  | "busy"
  /** The compaction itself failed (the brain, the disk). */
  | "failed"
  /** An Idempotency-Key sent again with another message than the one it was first sent with. */
  | "key-reused"
  /** The agent's disk is full: the message could not be journaled, so it was not taken (nothing was processed). */
  | "no-space"

export class HostError extends Data.TaggedError("HostError")<{
  readonly reason: HostErrorReason
  readonly id?: string
  readonly message: string
}> {}
