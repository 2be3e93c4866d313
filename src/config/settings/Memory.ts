/** An agent's memory: where it lives and when it is compacted. */
import type { NumberSetting, TextSetting } from "../Setting.js"

export const MemoryDir = {
  key: "PLANCKCLAW_DIR",
  kind: "text",
  accepts: "directory",
  default: "./memory",
  defaultText: "memory/ in the home",
  description: "the memory directory: soul.md, summary.md, history.jsonl, usage.jsonl",
  path: true,
  example: "memory"
} as const satisfies TextSetting

export const HistoryMax = {
  key: "HISTORY_MAX",
  kind: "integer",
  min: 1,
  max: 1_000_000_000,
  default: 200,
  description: "compact when history holds more lines than this",
  perAgent: true
} as const satisfies NumberSetting

export const HistoryKeep = {
  key: "HISTORY_KEEP",
  kind: "integer",
  min: 0,
  max: 100_000,
  rangeNote: "below HISTORY_MAX",
  default: 40,
  description: "lines kept after compaction and sent with each turn",
  details: "up to twice as many, mostly cached, with prompt caching",
  perAgent: true
} as const satisfies NumberSetting

export const CompactionChunk = {
  key: "PLANCKCLAW_COMPACTION_CHUNK",
  kind: "integer",
  min: 1,
  max: 10_000_000,
  default: 200_000,
  description: "characters of old history per compaction request (larger backlogs take several)"
} as const satisfies NumberSetting

export const group = { title: "Memory", settings: [MemoryDir, HistoryMax, HistoryKeep, CompactionChunk] } as const
