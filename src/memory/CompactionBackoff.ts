/**
 * How long a failed compaction waits before it is tried again. Without it a
 * summary the brain keeps answering unusably (empty, a tool call) was asked
 * again after every turn: a paid request every few turns to the same end.
 *
 * Measured in history lines this agent stores, not in time: a new try is
 * worth it once history has grown. After a failure the next try waits for
 * HISTORY_KEEP / 2 more lines (at least one exchange); each further failure
 * in a row doubles the wait, up to HISTORY_MAX lines. A compaction that ends
 * well (or `/compact`) clears it. Kept per agent in memory: a new process (or
 * an agent started again) tries once at its first due turn.
 */

/** Lines an exchange adds to history: the user's text and the reply. */
const LINES_PER_EXCHANGE = 2

export class CompactionBackoff {
  /** Lines still to be stored before the next try; 0 when not backing off. */
  private waiting = 0
  /** The wait after the last failure; 0 when the last compaction did not fail. */
  private gap = 0

  constructor(private readonly historyKeep: number, private readonly historyMax: number) {}

  /** Counts one stored exchange; true while a failed compaction is not to be tried again yet. */
  exchangeStored(): boolean {
    if (this.waiting <= 0) return false
    this.waiting -= LINES_PER_EXCHANGE
    return this.waiting > 0
  }

  /** A compaction failed: the lines to wait for before the next try (logged by the caller, once). */
  failed(): number {
    const first = Math.max(LINES_PER_EXCHANGE, Math.ceil(this.historyKeep / 2))
    this.gap = this.gap === 0 ? first : Math.min(this.gap * 2, Math.max(first, this.historyMax))
    this.waiting = this.gap
    return this.gap
  }

  /** A compaction ran (or found nothing to do): the next due one is tried at once. */
  succeeded(): void {
    this.waiting = 0
    this.gap = 0
  }
}

export const make = (historyKeep: number, historyMax: number): CompactionBackoff => new CompactionBackoff(historyKeep, historyMax)
