/**
 * Discord messages `serve --bridge discord` has handed to an agent and whose
 * reply is not yet in the outbox, in `.discord-owed.jsonl` in
 * PLANCKCLAW_AGENTS_DIR: the file journal lives beside the Discord bridge,
 * which keeps the same for `run` (interact/discord/OwedMessages.ts).
 */
export { FILE, make, parseStored, StoredMessage } from "../../interact/discord/OwedMessages.js"
