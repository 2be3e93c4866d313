/**
 * A webhook receiver on 127.0.0.1 for tests whose runners are processes
 * (plain promises, no Effect): every POST's JSON body is kept in `posted`,
 * answered 204. `hook(path)` is a schedule's destination for it.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface WebhookReceiver<Body> {
  readonly posted: Array<Body>
  readonly listen: () => Promise<void>
  readonly close: () => void
  readonly hook: (path: string) => string
}

export const make = <Body = unknown>(): WebhookReceiver<Body> => {
  const posted: Array<Body> = []
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (chunk: Buffer) => body += chunk.toString("utf8"))
    req.on("end", () => {
      posted.push(JSON.parse(body))
      res.writeHead(204).end()
    })
  })
  return {
    posted,
    listen: () => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve)),
    close: () => server.close(),
    hook: (path) => `webhook:http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`
  }
}
