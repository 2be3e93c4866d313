/**
 * A raw TCP connection to an HTTP server on loopback, for what fetch and
 * node:http will not do: stay idle, send half a request, pipeline a second
 * one on a kept-alive connection. Everything received is kept; `closed`
 * waits for the server to close the connection.
 */
import * as net from "node:net"
import { Deferred, Effect, type Scope } from "effect"

export interface RawConnection {
  readonly write: (text: string) => Effect.Effect<void>
  /** What the server has sent so far. */
  readonly received: Effect.Effect<string>
  /** Waits until the connection is closed (by the server, or refused); everything it received. */
  readonly closed: Effect.Effect<string>
  readonly isClosed: Effect.Effect<boolean>
  /** Waits until the server's answers hold `count` status lines. */
  readonly answers: (count: number) => Effect.Effect<string>
  /** Closes it from this side. */
  readonly close: Effect.Effect<void>
}

/** Connects to 127.0.0.1:`port`, waiting for the TCP handshake; destroyed when the scope closes. */
export const connect = (port: number): Effect.Effect<RawConnection, never, Scope.Scope> =>
  Effect.gen(function*() {
    const closed = yield* Deferred.make<string>()
    let received = ""
    const onData: Array<() => void> = []
    const socket = yield* Effect.acquireRelease(
      Effect.callback<net.Socket>((resume) => {
        const socket = net.connect(port, "127.0.0.1")
        socket.setEncoding("utf8")
        socket.on("data", (chunk: string) => {
          received += chunk
          for (const wake of onData.splice(0)) wake()
        })
        // A refused or reset connection counts as closed, with what it got.
        socket.on("error", () => {})
        socket.on("close", () => {
          Deferred.doneUnsafe(closed, Effect.succeed(received))
          for (const wake of onData.splice(0)) wake()
        })
        let resumed = false
        const once = () => {
          if (!resumed) resume(Effect.succeed(socket))
          resumed = true
        }
        socket.once("connect", once)
        socket.once("close", once)
      }),
      (socket) => Effect.sync(() => socket.destroy())
    )
    const statusLines = () => statuses(received).length
    return {
      write: (text) => Effect.callback<void>((resume) => void socket.write(text, () => resume(Effect.void))),
      received: Effect.sync(() => received),
      closed: Deferred.await(closed),
      isClosed: Deferred.isDone(closed),
      answers: (count) =>
        Effect.callback<string>((resume) => {
          const check = () => {
            if (statusLines() >= count || socket.destroyed) resume(Effect.succeed(received))
            else onData.push(check)
          }
          check()
        }),
      close: Effect.sync(() => void socket.destroy())
    }
  })

/** The status of each answer in `text`, in order (an answer follows the body before it on the same line). */
export const statuses = (text: string): Array<number> => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))

/** `text` cut into its answers. */
export const answersIn = (text: string): Array<string> => text.split(/(?=HTTP\/1\.1 \d{3} )/)

/** A request as it goes on the wire; a body gets its Content-Length. */
export const request = (method: string, target: string, body?: string, headers: Record<string, string> = {}) => {
  const lines = [`${method} ${target} HTTP/1.1`, "Host: 127.0.0.1", ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)]
  if (body !== undefined) lines.push("Content-Type: application/json", `Content-Length: ${Buffer.byteLength(body)}`)
  return `${lines.join("\r\n")}\r\n\r\n${body ?? ""}`
}
