/**
 * Writes config.env.example and the generated part of docs/configuration.md
 * from the settings' declarations (src/config/settings/), through tsc's
 * output in dist/. test/config/Settings.test.ts fails when either is stale.
 *
 * Usage: npm run gen:settings (builds first)
 */
import * as fs from "node:fs"
import { configEnvExample, withReferenceTables } from "../dist/config/SettingsReference.js"

const page = "docs/configuration.md"
const updated = withReferenceTables(fs.readFileSync(page, "utf8"))
if (updated === undefined) {
  console.error(`build/gen-settings.mjs: ${page} lacks the markers of its generated part (see src/config/SettingsReference.ts)`)
  process.exit(1)
}
fs.writeFileSync(page, updated)
fs.writeFileSync("config.env.example", configEnvExample())
console.log(`wrote config.env.example and ${page}`)
