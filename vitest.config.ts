import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One temporary directory per run, removed at its end (test/support/TestRunTmp.ts).
    globalSetup: ["test/support/TestRunTmp.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests spawn real processes and FIFOs; two cores, so keep the pool small.
    pool: "forks",
    maxWorkers: 2
  }
})
