/**
 * A map that keeps its most recently used entries, up to a bound: for what
 * the adapter learns as it runs (channels, threads, their servers), which
 * would otherwise grow with every thread made anywhere the bot can see.
 * Only for what can be learnt again: an entry dropped is asked for anew.
 */

export interface RecentlyUsed<V> {
  /** The entry, now the most recently used. */
  readonly get: (key: string) => V | undefined
  /** Sets the entry, the most recently used; the least recently used beyond the bound are dropped. */
  readonly set: (key: string, value: V) => void
  readonly delete: (key: string) => void
  /** Keys whose entry passes `test`, least recently used first; none is touched. */
  readonly keysWhere: (test: (value: V) => boolean) => ReadonlyArray<string>
  readonly size: () => number
}

export const make = <V>(bound: number): RecentlyUsed<V> => {
  // A Map iterates in insertion order: its first key is the least recently used.
  const entries = new Map<string, V>()
  return {
    get: (key) => {
      const value = entries.get(key)
      if (value !== undefined) {
        entries.delete(key)
        entries.set(key, value)
      }
      return value
    },
    set: (key, value) => {
      entries.delete(key)
      entries.set(key, value)
      for (const oldest of entries.keys()) {
        if (entries.size <= bound) break
        entries.delete(oldest)
      }
    },
    delete: (key) => {
      entries.delete(key)
    },
    keysWhere: (test) => [...entries].flatMap(([key, value]) => test(value) ? [key] : []),
    size: () => entries.size
  }
}
