/**
 * What a compaction folds and what its commit leaves: the words both
 * commits speak, the locked one (FoldStore.ts) and the one alongside a run's
 * appends (CommitAlongside.ts), apart so neither imports the other for them.
 */

/** What a compaction will fold: everything before `splitOffset`. */
export interface FoldPlan {
  readonly splitOffset: number
  readonly inode: number
  /**
   * summary.md's status when the plan was made (files only): a commit finding
   * another refuses, so a hand edit meanwhile is not overwritten by a summary
   * built from the text before it.
   */
  readonly summaryStamp?: string
  /**
   * history.jsonl's bytes around `splitOffset` when the plan was made (files
   * only): a commit finding others refuses, so a hand edit that moved the
   * lines meanwhile (one removed in place, as nano saves) does not make it
   * keep a tail that starts in the middle of a line.
   */
  readonly splitBytes?: Buffer
}

export interface FoldResult {
  /** Lines left in history after the commit (the kept tail plus any appended meanwhile). */
  readonly kept: number
  /** Size of the summary.md written. */
  readonly summaryBytes: number
}
