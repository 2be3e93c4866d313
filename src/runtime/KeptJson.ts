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

/**
 * What was last written under one top-level key of a request: the key's
 * `"key":`, made once; the last string and its JSON; the last array's
 * elements (a copy: the caller's array may grow before the next request),
 * their JSON joined by commas, and where each element's JSON ends in it;
 * where that JSON begins in the frame being assembled.
 */
interface KeptField {
  readonly prefix: string
  text: string | undefined
  textJson: string
  items: Array<unknown>
  ends: Array<number>
  body: string
  bodyAt: number
}

const keptField = (key: string): KeptField => ({
  prefix: `${JSON.stringify(key)}:`,
  text: undefined,
  textJson: "",
  items: [],
  ends: [],
  body: "",
  bodyAt: 0
})

/** An array JSON writes element by element: not a subclass, no toJSON of its own. */
const isPlainArray = (value: unknown): value is ReadonlyArray<unknown> =>
  Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype &&
  typeof (value as { toJSON?: unknown }).toJSON !== "function"

/**
 * JSON of a brain request, assembled from pieces kept between requests:
 * the JSON of each top-level array (the history messages, the tool specs)
 * and of each top-level string by key while it is equal. A turn resends the
 * same history messages and tool specs (Prompt keeps their identity), so
 * most of the request's JSON is made once. The text is exactly
 * `JSON.stringify`'s, then `suffix`. Its caller's contract: a request's
 * objects are never modified once made (Prompt's and Turn's are not; an
 * array may grow, as a tool round's messages do). A value outside plain
 * JSON data (toJSON, class instances), or anything JSON cannot write (a
 * cycle, a BigInt), gives undefined: the caller then writes that request
 * with `JSON.stringify` whole.
 *
 * One maker may serve the requests of many agents (serve's brain): their
 * arrays then rarely follow the last one, and each element is looked up by
 * identity, its JSON kept while the element lives (a WeakMap).
 *
 * An array is matched against the one written last under its key, element
 * by element by identity, so a replaced or reordered element is never
 * served from the kept JSON. The history window grows (or slides) from one
 * turn to the next, so the new array usually begins with a run of the last
 * one's elements, then new ones: the run's JSON is the kept JSON cut at
 * known offsets (all of it when the array is unchanged or only grew), and
 * only the new elements are written. An array whose first element was not
 * in the last one looks each element up by identity.
 */
export const make = (suffix = ""): ((request: unknown) => string | undefined) => {
  const elements = new WeakMap<object, string>()
  const fields = new Map<string, KeptField>()
  /** JSON of an element never seen: undefined for one that only `JSON.stringify` whole may write. */
  const freshJson = (element: unknown): string | undefined => {
    if (!isPlainObject(element)) {
      // Inside an array JSON writes undefined, functions and symbols as null.
      if (element === undefined || typeof element === "function" || typeof element === "symbol") return "null"
      return Array.isArray(element) || (typeof element === "object" && element !== null) ? undefined : JSON.stringify(element)
    }
    return JSON.stringify(element)
  }
  const elementJson = (element: unknown): string | undefined => {
    if (typeof element !== "object" || element === null) return freshJson(element)
    let json = elements.get(element)
    if (json === undefined) {
      json = freshJson(element)
      if (json !== undefined) elements.set(element, json)
    }
    return json
  }
  /** The elements' JSON joined by commas, from the kept run and the new elements; `field` then holds `value`. */
  const elementsJson = (field: KeptField, value: ReadonlyArray<unknown>): string | undefined => {
    let { ends, items } = field
    const kept = field.body
    // Nothing is kept while this runs: an element JSON refuses, or throws on
    // (a BigInt), leaves the field empty, never half-made.
    field.items = []
    field.body = ""
    const count = value.length
    const from = count === 0 || items.length === 0 ? -1 : items[0] === value[0] ? 0 : items.indexOf(value[0])
    let body = ""
    let run = 0
    if (from < 0) {
      items = []
      ends = []
    } else {
      const most = Math.min(items.length - from, count)
      run = 1
      while (run < most && value[run] === items[from + run]) run++
      const start = from === 0 ? 0 : ends[from - 1]! + 1
      const end = ends[from + run - 1]!
      body = start === 0 && end === kept.length ? kept : kept.slice(start, end)
      if (from === 0) {
        items.length = run
        ends.length = run
      } else {
        items = items.slice(from, from + run)
        const shifted = new Array<number>(run)
        for (let i = 0; i < run; i++) shifted[i] = ends[from + i]! - start
        ends = shifted
      }
    }
    for (let i = run; i < count; i++) {
      // Past a kept run, elements are new (the new user message, the lines just stored): no lookup.
      const json = run === 0 ? elementJson(value[i]) : freshJson(value[i])
      if (json === undefined) return undefined
      body = i === 0 ? json : `${body},${json}`
      items.push(value[i])
      ends.push(body.length)
    }
    field.items = items
    field.ends = ends
    field.body = body
    return body
  }
  /** JSON of a value other than a plain array. */
  const valueJson = (field: KeptField, value: unknown): string | undefined => {
    if (typeof value === "string") {
      if (field.text !== value) {
        field.textJson = JSON.stringify(value)
        field.text = value
      }
      return field.textJson
    }
    return typeof value === "object" && value !== null && !isPlainObject(value) ? undefined : JSON.stringify(value)
  }
  /** The fields written as arrays by the request being assembled. */
  const arrayFields: Array<KeptField> = []
  const assemble = (request: unknown): string | undefined => {
    if (!isPlainObject(request)) return undefined
    arrayFields.length = 0
    let json = "{"
    let first = true
    for (const key of Object.keys(request)) {
      const value = request[key]
      // Left out by JSON, as JSON.stringify leaves them out.
      if (value === undefined || typeof value === "function" || typeof value === "symbol") continue
      let field = fields.get(key)
      if (field === undefined) {
        field = keptField(key)
        fields.set(key, field)
      }
      let part: string | undefined
      if (isPlainArray(value)) {
        const body = elementsJson(field, value)
        if (body === undefined) return undefined
        part = `[${body}]`
        // After the "{" or ",", the key and the "[".
        field.bodyAt = (first ? 1 : json.length + 1) + field.prefix.length + 1
        arrayFields.push(field)
      } else {
        part = valueJson(field, value)
        if (part === undefined) return undefined
      }
      json = first ? `{${field.prefix}${part}` : `${json},${field.prefix}${part}`
      first = false
    }
    const frame = `${json}}${suffix}`
    // The kept bodies become slices of this frame. Slicing makes V8 flatten
    // the frame (concatenated pieces) into one string once, which the pipe
    // write needs anyway; the next request then cuts them without copying,
    // where cutting a body still made of pieces would copy it all.
    for (const field of arrayFields) field.body = frame.slice(field.bodyAt, field.bodyAt + field.body.length)
    return frame
  }
  return (request) => {
    const assembled = Result.try(() => assemble(request))
    return Result.isSuccess(assembled) ? assembled.success : undefined
  }
}
