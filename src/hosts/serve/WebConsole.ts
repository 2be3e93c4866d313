/**
 * The web console's files, served at / on serve's address: the page, its
 * script and its style sheet, built by build/bundle.mjs from console/ into
 * dist/web-console/ and read once at start. Each answer carries a strict
 * Content-Security-Policy: the page may load and call only its own origin,
 * runs no inline script, and may not be framed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { packageRoot } from "../../config/PackageRoot.js"

export const CONTENT_SECURITY_POLICY = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
  "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/** Path → file in dist/web-console/, and its media type. */
const FILES: ReadonlyArray<readonly [string, string, string]> = [
  ["/", "index.html", "text/html; charset=utf-8"],
  ["/console.js", "console.js", "text/javascript; charset=utf-8"],
  ["/console.css", "console.css", "text/css; charset=utf-8"]
]

export const headers = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-cache"
} as const

export interface WebConsole {
  /** The answer for a GET of one of the console's paths; none for any other request. */
  readonly answer: (method: string, url: string) => Option.Option<HttpServerResponse.HttpServerResponse>
}

/** Where the built console is: dist/web-console/ of the installed package. */
export const directory = (): string | undefined => {
  const root = packageRoot()
  return root === undefined ? undefined : path.join(root, "dist", "web-console")
}

/** The console's files read from `dir`, or what is missing (a build without them). */
export const load = (dir: string | undefined = directory()): Result.Result<WebConsole, string> => {
  if (dir === undefined) return Result.fail("the package's directory was not found")
  const files = new Map<string, { readonly body: Uint8Array; readonly type: string }>()
  for (const [route, name, type] of FILES) {
    const body = Result.try(() => fs.readFileSync(path.join(dir, name)))
    if (Result.isFailure(body)) return Result.fail(`${path.join(dir, name)} cannot be read (run npm run build)`)
    files.set(route, { body: body.success, type })
  }
  return Result.succeed({
    answer: (method, url) => {
      if (method !== "GET" && method !== "HEAD") return Option.none()
      const file = files.get(url.split("?")[0]!)
      return file === undefined
        ? Option.none()
        : Option.some(HttpServerResponse.uint8Array(file.body, { contentType: file.type, headers }))
    }
  })
}
