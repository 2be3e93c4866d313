/**
 * The compaction instruction: the system prompt of every compaction request
 * (Prompt.compactionRequest), and how the usage ledger tells a compaction's
 * brain answer from a turn's (UsageLedger.lineOf). Here, below both, so the
 * ledger does not import the agent's prompt builder.
 */

/** The original PlanckClaw's compaction instruction, kept word for word. */
export const COMPACTION_SYSTEM =
  "You are a memory compaction assistant. Summarize the following conversation, preserving: key facts about the user, their preferences, decisions made, ongoing projects, and important context. Be concise but complete. Output only the summary, no preamble."
