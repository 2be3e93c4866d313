/**
 * Each measurement runs in its own node process (fresh heap and JIT, its
 * own resident memory); it hands its figures back to bench/run.mjs over IPC,
 * or prints them when run on its own (`node --expose-gc bench/<name>.mjs`).
 */
export const report = (payload) =>
  new Promise((resolve, reject) => {
    if (process.send === undefined) {
      console.log(JSON.stringify(payload, null, 2))
      return resolve()
    }
    process.send(payload, (error) => (error ? reject(error) : resolve()))
  })

/** Runs a measurement's main, reports its result, exits non-zero on failure. */
export const main = (measure) => {
  measure().then(report).then(
    () => process.exit(0),
    (error) => {
      console.error(error instanceof Error ? error.stack : error)
      process.exit(1)
    }
  )
}

/** Progress on stderr, so stdout stays for the table. */
export const progress = (text) => process.stderr.write(`  ${text}\n`)
