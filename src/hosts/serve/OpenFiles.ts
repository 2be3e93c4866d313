/**
 * Which started agents keep their memory files open between messages. An
 * agent holds up to four descriptors (history, its ledger, the inbox
 * journal, usage.jsonl); keeping them saves opening, checking and closing
 * each file at every message, and lets its appends go without the write
 * lock file (see MemoryDir.appendAlone). The host keeps them for the
 * agents used most recently, up to a budget, and closes the files of the
 * least recently used beyond it, so ten thousand agents sent a message at
 * once still fit in the usual `ulimit -n`. A closed file is opened again
 * by the agent's next write, so closing may happen between any two steps
 * of a message.
 */
import * as Effect from "effect/Effect"

export interface OpenFiles {
  /**
   * The agent `holder` (a token per started instance) was just used and may
   * hold open files, closed by `close`: it becomes the most recently used,
   * and the least recently used beyond the budget close theirs.
   */
  readonly used: (holder: object, close: Effect.Effect<void>) => Effect.Effect<void>
  /** The instance stopped (its scope closes its files): forgotten, not closed. */
  readonly forget: (holder: object) => void
  /** How many agents keep open files now. */
  readonly size: () => number
}

/** `budget`: agents keeping their files open at most (PLANCKCLAW_AGENTS_HOLDING_FILES), four descriptors each. */
export const make = (budget: number): OpenFiles => {
  // A Map iterates in insertion order: its first key is the least recently used.
  const keeping = new Map<object, Effect.Effect<void>>()
  const used = (holder: object, close: Effect.Effect<void>) =>
    Effect.suspend(() => {
      keeping.delete(holder)
      keeping.set(holder, close)
      if (keeping.size <= budget) return Effect.void
      const closing: Array<Effect.Effect<void>> = []
      for (const [oldest, closeOldest] of keeping) {
        if (keeping.size <= budget) break
        keeping.delete(oldest)
        closing.push(closeOldest)
      }
      return Effect.forEach(closing, (closeOne) => closeOne, { discard: true })
    })
  return {
    used,
    forget: (holder) => {
      keeping.delete(holder)
    },
    size: () => keeping.size
  }
}
