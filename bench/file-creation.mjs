/**
 * What making a new agent's files costs on this disk, and what deleting many
 * files just before does to it (not part of `npm run bench`):
 *
 *   node bench/file-creation.mjs [AGENTS] [DELETED]     defaults 3000 and 30000
 *
 * Each phase makes AGENTS directories of four files each (what a new agent
 * of `serve` makes: its directory, journal, usage ledger, history and the
 * history's ledger) in a fresh directory under bench/.work, and prints this
 * process's system and user CPU per directory:
 *
 * - quiet: first, as the disk is when the script starts;
 * - after deleting: right after DELETED files were made and deleted in
 *   the directory it makes its own in (so in the same block groups);
 * - a minute later: the same again there, 60 s after that deletion;
 * - tmpfs: the same in /dev/shm, when it exists (no disk at all).
 *
 * On ext4 without a journal (no entry under /proc/fs/jbd2 for the disk), the
 * kernel does not reuse an inode freed less than a minute ago, six while
 * its inode-table block is not yet written back; each new file walks past
 * them. Nothing is deleted until the last phase is measured. Start it after
 * two minutes with nothing deleted, or the quiet phase is not quiet.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { benchDir } from "./lib/work.mjs"

const AGENTS = Number(process.argv[2] ?? 3000)
const DELETED = Number(process.argv[3] ?? 30000)
const FILES = ["inbox.journal", "usage.jsonl", "history.jsonl", "history.ledger"]

const root = path.join(benchDir, ".work")
fs.mkdirSync(root, { recursive: true })
const made = []

/** Makes AGENTS agent directories in `dir`: this process's CPU per directory, µs. */
const phase = (name, dir) => {
  const before = process.cpuUsage()
  const started = performance.now()
  for (let i = 0; i < AGENTS; i++) {
    const agent = path.join(dir, `${name.replace(/\W+/g, "-")}-${i}`)
    fs.mkdirSync(agent, { mode: 0o700 })
    for (const file of FILES) fs.closeSync(fs.openSync(path.join(agent, file), "a", 0o600))
  }
  const wall = performance.now() - started
  const used = process.cpuUsage(before)
  const perAgent = (us) => Math.round(us / AGENTS)
  return { phase: name, systemUs: perAgent(used.system), userUs: perAgent(used.user), wallUs: perAgent(wall * 1000) }
}

const freshDir = (parent) => {
  const dir = fs.mkdtempSync(path.join(parent, "file-creation-"))
  made.push(dir)
  return dir
}

/** DELETED files made and deleted in `dir`, where the next phases make their files: the same block groups. */
const deleteMany = (dir) => {
  for (let i = 0; i < DELETED; i++) fs.closeSync(fs.openSync(path.join(dir, `file-${i}`), "w"))
  for (let i = 0; i < DELETED; i++) fs.unlinkSync(path.join(dir, `file-${i}`))
}

const journalless = () => {
  const names = fs.existsSync("/proc/fs/jbd2") ? fs.readdirSync("/proc/fs/jbd2") : []
  return names.length === 0 ? "no ext4 journal is open on this machine" : `journals open: ${names.join(", ")}`
}

const results = [phase("quiet", freshDir(root))]
const deletedIn = freshDir(root)
deleteMany(deletedIn)
results.push(phase(`after deleting ${DELETED} files`, deletedIn))
await sleep(60_000)
results.push(phase("a minute after that deletion", deletedIn))
if (fs.existsSync("/dev/shm")) results.push(phase("tmpfs", freshDir("/dev/shm")))
for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
if (fs.readdirSync(root).length === 0) fs.rmdirSync(root)

console.log(JSON.stringify({ agents: AGENTS, filesPerAgent: FILES.length, journals: journalless(), cpus: os.cpus()[0]?.model, results }, null, 2))
