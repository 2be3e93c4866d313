/** Schedules (docs/schedules.md): what `run` and `serve` do with the entries they missed while down. */
import type { NumberSetting } from "../Setting.js"

export const ScheduleGrace = {
  key: "PLANCKCLAW_SCHEDULE_GRACE",
  kind: "seconds",
  min: 0,
  max: 7 * 86400,
  default: 600,
  description: "seconds a missed schedule run may be late and still fire (once) at start; older misses are skipped and logged",
  details: "see [Schedules](schedules.md)"
} as const satisfies NumberSetting

export const group = { title: "Schedules", settings: [ScheduleGrace] } as const
