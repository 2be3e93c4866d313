/**
 * The JSON of brain requests made mostly from the JSON of the last ones:
 * each turn resends the same history messages and tool specs, whose JSON is
 * kept (by identity) rather than written again. Used for the request frames
 * over the FIFOs (pipes/BrainFrame) and the bodies of the HTTP brains.
 */
import * as Result from "effect/Result"

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return (proto === Object.prototype || proto === null) && typeof (value as { toJSON?: unknown }).toJSON !== "function"
}

/** An array JSON writes element by element: not a subclass, no toJSON of its own. */
const isPlainArray = (value: unknown): value is ReadonlyArray<unknown> =>
  Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype &&
  typeof (value as { toJSON?: unknown }).toJSON !== "function"

/**
 * An array last written under a key: its elements (a copy: the caller's
 * array may grow before the next request) and each one's JSON. Each JSON is
 * a string of its own, so keeping an agent's array keeps its messages' JSON
 * and nothing else of the request.
 */
interface KeptArray {
  items: Array<unknown>
  jsons: Array<string>
}

/** What is kept under one top-level key: its `"key":`, the last string and its JSON, the arrays. */
interface KeptKey {
  readonly prefix: string
  text: string | undefined
  textJson: string
  /** The array written last under the key. */
  last: KeptArray
  /** The array each element was last written in (an agent's array is found again by its first element). */
  readonly owners: WeakMap<object, KeptArray>
}

/** JSON of an element never seen: undefined for one that only `JSON.stringify` whole may write. */
const freshJson = (element: unknown): string | undefined => {
  if (!isPlainObject(element)) {
    // Inside an array JSON writes undefined, functions and symbols as null.
    if (element === undefined || typeof element === "function" || typeof element === "symbol") return "null"
    return Array.isArray(element) || (typeof element === "object" && element !== null) ? undefined : JSON.stringify(element)
  }
  return JSON.stringify(element)
}

/**
 * JSON of a brain request, assembled from pieces kept between requests:
 * the JSON of each element of a top-level array (the history messages, the
 * tool specs) and of each top-level string by key while it is equal. A
 * turn resends the same history messages and tool specs (Prompt keeps their
 * identity), so most of the request's JSON is made once. The text is
 * exactly `JSON.stringify`'s, then `suffix`. Its caller's contract: a
 * request's objects are never modified once made (Prompt's and Turn's are
 * not; an array may grow, as a tool round's messages do). A value outside
 * plain JSON data (toJSON, class instances), or anything JSON cannot write
 * (a cycle, a BigInt), gives undefined: the caller then writes that request
 * with `JSON.stringify` whole.
 *
 * An array is matched, element by element by identity, against the one its
 * first element was last written in (else the key's last one), so a
 * replaced or reordered element is never served from the kept JSON. The
 * history window grows (or slides) from one turn to the next, so the new
 * array usually begins with a run of that one's elements, then new ones:
 * only the new ones are written. One maker may serve the requests of many
 * agents whose turns interleave (serve's brain): each agent's array is
 * found again by its first element (or its second, after a first made anew
 * for each request), not only when it follows the last array of all. An
 * array found in none, or that parts from the one found, looks its other
 * elements up by identity.
 */
export const make = (suffix = ""): ((request: unknown) => string | undefined) => {
  const elements = new WeakMap<object, string>()
  const keys = new Map<string, KeptKey>()
  const elementJson = (element: unknown): string | undefined => {
    if (typeof element !== "object" || element === null) return freshJson(element)
    let json = elements.get(element)
    if (json === undefined) {
      json = freshJson(element)
      if (json !== undefined) elements.set(element, json)
    }
    return json
  }
  /**
   * The array `value` continues: the one its first element was last written
   * in, else its second's (a first element made anew for each request: the
   * Chat Completions system message), else the key's last one.
   */
  const keptArrayOf = (kept: KeptKey, value: ReadonlyArray<unknown>): KeptArray => {
    const [head, next] = value
    if (typeof head !== "object" || head === null || kept.last.items[0] === head) return kept.last
    const found = kept.owners.get(head) ?? (typeof next === "object" && next !== null ? kept.owners.get(next) : undefined)
    return found ?? (kept.last.items.length === 0 ? kept.last : { items: [], jsons: [] })
  }
  /** The elements' JSON joined by commas, from the kept run and the new elements; `array` then holds `value`. */
  const elementsJson = (kept: KeptKey, array: KeptArray, value: ReadonlyArray<unknown>): string | undefined => {
    const { items: was, jsons: wasJson } = array
    // Nothing is kept while this runs: an element JSON refuses, or throws on
    // (a BigInt), leaves the array empty, never half-made.
    array.items = []
    array.jsons = []
    const count = value.length
    let lead = 0
    let from = count === 0 || was.length === 0 ? -1 : was[0] === value[0] ? 0 : was.indexOf(value[0])
    if (from < 0 && count > 1 && was.length > 1) {
      // The run may begin at the second element, the first written on its own.
      from = was[1] === value[1] ? 1 : was.indexOf(value[1])
      lead = from < 0 ? 0 : 1
    }
    let run = 0
    if (from >= 0) {
      const most = Math.min(was.length - from, count - lead)
      run = 1
      while (run < most && value[lead + run] === was[from + run]) run++
    }
    // Past a run that reached the kept array's end, elements are new (the new user message, the lines just
    // stored): no lookup. Past one that did not (an edited window, another agent's array that began alike),
    // and with no run, each is looked up.
    const lookUp = run === 0 || from + run < was.length
    let items: Array<unknown> = was
    let jsons: Array<string> = wasJson
    if (lead === 0 && from === 0) {
      // The usual case, the kept array going on: cut back to the run where it is, not copied.
      items.length = run
      jsons.length = run
    } else {
      items = []
      jsons = []
      if (lead === 1) {
        const json = freshJson(value[0])
        if (json === undefined) return undefined
        items.push(value[0])
        jsons.push(json)
      }
      for (let k = 0; k < run; k++) {
        items.push(was[from + k])
        jsons.push(wasJson[from + k]!)
      }
    }
    for (let i = lead + run; i < count; i++) {
      const item = value[i]
      const json = lookUp ? elementJson(item) : freshJson(item)
      if (json === undefined) return undefined
      items.push(item)
      jsons.push(json)
      if (typeof item === "object" && item !== null) kept.owners.set(item, array)
    }
    array.items = items
    array.jsons = jsons
    return jsons.join(",")
  }
  /** JSON of a value other than a plain array. */
  const valueJson = (kept: KeptKey, value: unknown): string | undefined => {
    if (typeof value === "string") {
      if (kept.text !== value) {
        kept.textJson = JSON.stringify(value)
        kept.text = value
      }
      return kept.textJson
    }
    return typeof value === "object" && value !== null && !isPlainObject(value) ? undefined : JSON.stringify(value)
  }
  const assemble = (request: unknown): string | undefined => {
    if (!isPlainObject(request)) return undefined
    let json = "{"
    let first = true
    for (const key of Object.keys(request)) {
      const value = request[key]
      // Left out by JSON, as JSON.stringify leaves them out.
      if (value === undefined || typeof value === "function" || typeof value === "symbol") continue
      let kept = keys.get(key)
      if (kept === undefined) {
        kept = { prefix: `${JSON.stringify(key)}:`, text: undefined, textJson: "", last: { items: [], jsons: [] }, owners: new WeakMap() }
        keys.set(key, kept)
      }
      let part: string | undefined
      if (isPlainArray(value)) {
        const array = keptArrayOf(kept, value)
        const body = elementsJson(kept, array, value)
        if (body === undefined) return undefined
        kept.last = array
        part = `[${body}]`
      } else {
        part = valueJson(kept, value)
        if (part === undefined) return undefined
      }
      json = first ? `{${kept.prefix}${part}` : `${json},${kept.prefix}${part}`
      first = false
    }
    return `${json}}${suffix}`
  }
  return (request) => {
    const assembled = Result.try(() => assemble(request))
    return Result.isSuccess(assembled) ? assembled.success : undefined
  }
}
