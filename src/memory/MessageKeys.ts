/**
 * The keys of the messages an inbox accepts (see Inbox.ts), under which
 * history knows whether an exchange is stored (see Ledger.ts): unique across
 * runs, and across the inboxes one process opens (serve opens an agent's
 * again after letting it go idle). A random prefix drawn once per process,
 * at its first key, and a counter all its inboxes share, rather than random
 * bytes per message (OpenSSL's getpid(2) fork check and the CSPRNG on every
 * message) or per inbox.
 *
 * The prefix comes from the kernel's generator, /dev/urandom, read directly:
 * node:crypto (whose randomBytes draws from the same source), loaded only
 * for it, took a start about 3.5 ms, and nothing else a run does loads it.
 * Where that device cannot be read, the Web Crypto global gives the bytes.
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"

/** `count` random bytes, as hex, from `device`, or from the Web Crypto global when it cannot be read whole. */
export const randomHex = (count: number, device = "/dev/urandom"): string => {
  const bytes = Buffer.alloc(count)
  const read = Result.try(() => {
    const fd = fs.openSync(device, "r")
    try {
      return fs.readSync(fd, bytes, 0, count, null)
    } finally {
      fs.closeSync(fd)
    }
  })
  if (Result.getOrElse(read, () => 0) !== count) globalThis.crypto.getRandomValues(bytes)
  return bytes.toString("hex")
}

// Process-wide by nature: a key must be unique across every inbox of the process, whatever scope opened it.
let prefix: string | undefined
let counter = 0

/** A key no message of any run has had: this process's prefix and its next count. */
export const newKey = (): string => `${prefix ??= randomHex(12)}-${(counter++).toString(36)}`
