/**
 * One finding of `planckclaw doctor`: what was checked, whether it passed,
 * what was seen, and (when it failed) what to do. Rendered one per line with
 * ✔ or ✘, coloured only on a terminal without NO_COLOR. A finding never
 * holds a secret: checks say "rejected", never the key.
 */
import * as Data from "effect/Data"

export interface Finding {
  /** What was checked, e.g. `brain`, `claw dice.sh`. */
  readonly subject: string
  /** `skip`: not applicable with these settings (Discord not configured, a brain served from outside). */
  readonly status: "pass" | "fail" | "skip"
  readonly detail: string
  /** What to do about a failure. */
  readonly remedy?: string
}

export const pass = (subject: string, detail: string): Finding => ({ subject, status: "pass", detail })
export const skip = (subject: string, detail: string): Finding => ({ subject, status: "skip", detail })
export const fail = (subject: string, detail: string, remedy?: string): Finding =>
  remedy === undefined ? { subject, status: "fail", detail } : { subject, status: "fail", detail, remedy }

/** Some checks failed: the lines are printed already; the entry point exits 1. */
export class DoctorFailed extends Data.TaggedError("DoctorFailed")<{
  readonly failed: number
  readonly total: number
  readonly message: string
}> {}

/** Colour only for a terminal, and never under NO_COLOR (https://no-color.org) or TERM=dumb. */
export const colourWanted = (stream: { readonly isTTY?: boolean }, env: Record<string, string | undefined>): boolean =>
  stream.isTTY === true && (env.NO_COLOR ?? "") === "" && env.TERM !== "dumb"

const marks = { pass: "✔", fail: "✘", skip: "–" } as const
const colours = { pass: "\u001b[32m", fail: "\u001b[31m", skip: "\u001b[2m" } as const

/** One line: mark, subject, what was seen and, for a failure, what to do. */
export const render = (finding: Finding, colour: boolean): string => {
  const mark = colour ? `${colours[finding.status]}${marks[finding.status]}\u001b[0m` : marks[finding.status]
  const remedy = finding.remedy === undefined ? "" : ` → ${finding.remedy}`
  return `${mark} ${finding.subject}: ${finding.detail}${remedy}`
}

/** Human sizes for free space: 1.5 GiB, 300 MiB, 12 KiB. */
export const formatBytes = (bytes: number): string => {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${value} bytes` : `${value >= 10 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`
}
