import fs from 'node:fs'
import path from 'node:path'

// Summarizes a V8 .cpuprofile (from `node --cpu-prof`): self time by function and by package.
// Usage: node --import tsx bench/profile.ts <file.cpuprofile> [top] [skip seconds]
interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
}

const file = process.argv[2]!
const top = Number(process.argv[3] ?? 25)
/** Samples before this many seconds (the start-up) are left out; idle time is never counted. */
const skipSeconds = Number(process.argv[4] ?? 0)
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map<number, number>()
let clock = 0
profile.samples.forEach((id, i) => {
  clock += profile.timeDeltas[i] ?? 0
  if (clock < skipSeconds * 1e6 || byId.get(id)?.callFrame.functionName === '(idle)') return
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
})
const total = [...self.values()].reduce((s, v) => s + v, 0)

function where(url: string): string {
  if (!url) return '(native/V8)'
  const nm = url.lastIndexOf('node_modules/')
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split('/')
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!
  }
  if (url.startsWith('node:')) return url
  return path.relative(process.cwd(), url.replace(/^file:\/\//, ''))
}

const fns = new Map<string, number>()
const pkgs = new Map<string, number>()
for (const [id, t] of self) {
  const n = byId.get(id)!
  const fn = `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
  fns.set(fn, (fns.get(fn) ?? 0) + t)
  const pkg = where(n.callFrame.url).replace(/^src\/.*/, 'src (the service)')
  pkgs.set(pkg, (pkgs.get(pkg) ?? 0) + t)
}
const show = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`)
    .join('\n')
process.stdout.write(
  `${(total / 1000).toFixed(0)} ms of CPU sampled (idle and the first ${skipSeconds} s left out)\n\nby package:\n${show(pkgs, 15)}\n\nby function (self time):\n${show(fns, top)}\n`,
)
