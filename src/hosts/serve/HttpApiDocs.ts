/**
 * GET /v1/docs: the OpenAPI document as a web page, made here from the
 * document itself. Self-contained (no script, no font, no image, nothing
 * fetched: it works with no network) and sent with a Content-Security-Policy
 * that allows its one stylesheet and nothing else. Effect's own reference
 * pages (Scalar, Swagger UI) run megabytes of script, or load it from a CDN.
 */
import * as crypto from "node:crypto"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as OpenApi from "effect/http-api/OpenApi"

const STYLE = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}" +
  "h2{margin-top:2.5rem;border-top:1px solid #ccc;padding-top:1rem}code,pre{font:13px ui-monospace,monospace}" +
  "pre{background:#f4f4f4;padding:.6rem;overflow:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;" +
  "padding:.2rem .5rem;text-align:left;vertical-align:top}.method{font-weight:bold}"

const styleHash = crypto.createHash("sha256").update(STYLE, "utf8").digest("base64")

/** Allows the page's own stylesheet and nothing else: no script, no request of any kind. */
export const CONTENT_SECURITY_POLICY =
  `default-src 'none'; style-src 'sha256-${styleHash}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

const escape = (text: string): string =>
  text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)

const json = (value: unknown): string => `<pre>${escape(JSON.stringify(value, null, 2))}</pre>`

type Operation = OpenApi.OpenAPISpecOperation

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"] as const

const operation = (method: string, path: string, op: Operation): string => {
  const parameters = op.parameters ?? []
  const body = op.requestBody?.content
  const responses = Object.entries(op.responses ?? {})
  return [
    `<h2><span class="method">${method.toUpperCase()}</span> <code>${escape(path)}</code></h2>`,
    op.description === undefined ? "" : `<p>${escape(op.description)}</p>`,
    op.security === undefined || op.security.length === 0 ? "<p>No token needed.</p>" : "<p>Needs <code>Authorization: Bearer &lt;PLANCKCLAW_HTTP_TOKEN&gt;</code> when that is set.</p>",
    parameters.length === 0 ? "" : [
      "<h3>Parameters</h3><table><tr><th>Name</th><th>In</th><th>Required</th><th>Schema</th></tr>",
      ...parameters.map((parameter) =>
        `<tr><td><code>${escape(parameter.name)}</code></td><td>${escape(parameter.in)}</td><td>${parameter.required === true ? "yes" : "no"}</td>` +
        `<td>${json(parameter.schema)}</td></tr>`
      ),
      "</table>"
    ].join(""),
    body === undefined ? "" : `<h3>Request body</h3>${Object.entries(body).map(([type, media]) => `<p><code>${escape(type)}</code></p>${json(media.schema)}`).join("")}`,
    "<h3>Responses</h3><table><tr><th>Status</th><th>Description</th><th>Body</th></tr>",
    ...responses.map(([status, response]) => {
      const content = Object.entries(response.content ?? {})
      return `<tr><td>${escape(status)}</td><td>${escape(response.description ?? "")}</td><td>` +
        content.map(([type, media]) => `<code>${escape(type)}</code>${json(media.schema)}`).join("") + "</td></tr>"
    }),
    "</table>"
  ].join("\n")
}

/** The page of `spec`: each route with its parameters, body and responses, then the schemas they name. */
export const page = (spec: OpenApi.OpenAPISpec): string => {
  const routes = Object.entries(spec.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const op = (item as Record<string, Operation | undefined>)[method]
      return op === undefined ? [] : [operation(method, path, op)]
    })
  )
  const schemas = Object.entries(spec.components.schemas).map(([name, schema]) => `<h3 id="${escape(name)}">${escape(name)}</h3>${json(schema)}`)
  return [
    "<!doctype html>",
    `<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<title>${escape(spec.info.title)} HTTP API</title><style>${STYLE}</style></head><body><main>`,
    `<h1>${escape(spec.info.title)} HTTP API <small>${escape(spec.info.version)}</small></h1>`,
    spec.info.description === undefined ? "" : `<p>${escape(spec.info.description)}</p>`,
    "<p>The same, as OpenAPI 3: <code>GET /v1/openapi.json</code>. Every refusal is JSON: " +
    "<code>{\"error\": &lt;code&gt;, \"message\": &lt;what was wrong&gt;}</code>.</p>",
    ...routes,
    schemas.length === 0 ? "" : `<h2>Schemas</h2>${schemas.join("\n")}`,
    "</main></body></html>"
  ].join("\n")
}

/** The page as an answer, with its Content-Security-Policy. */
export const response = (spec: OpenApi.OpenAPISpec): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(page(spec), {
    contentType: "text/html; charset=utf-8",
    headers: {
      "content-security-policy": CONTENT_SECURITY_POLICY,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer"
    }
  })
