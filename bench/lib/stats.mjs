/**
 * Small statistics helpers: percentiles by the nearest-rank method, and
 * rounding for the table and results.json.
 */

/** The p-th percentile (0..100) of the samples, nearest rank. */
export const percentile = (samples, p) => {
  if (samples.length === 0) return Number.NaN
  const sorted = Float64Array.from(samples).sort()
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]
}

export const median = (samples) => percentile(samples, 50)

/** Rounds to `digits` significant decimals, keeping small values readable. */
export const round = (value, digits = 3) => {
  if (!Number.isFinite(value)) return value
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}

/** p50, p99 and throughput of per-message latencies (milliseconds). */
export const latencySummary = (samples, wallMs) => ({
  n: samples.length,
  p50: round(percentile(samples, 50), 4),
  p99: round(percentile(samples, 99), 4),
  max: round(Math.max(...samples), 3),
  msgsPerSec: Math.round((samples.length / wallMs) * 1000)
})
