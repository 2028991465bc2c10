// Every installed package must accept the oldest release of each Node line that package.json's
// `engines` promises: npm ci warns only about the Node it runs on, the newest of its line.
// Usage: node scripts/check-engines.mjs [directory holding package.json and package-lock.json]
import fs from 'node:fs'
import path from 'node:path'
import semver from 'semver'

const dir = path.resolve(process.argv[2] ?? '.')
const promised = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).engines?.node
if (typeof promised !== 'string') throw new Error('package.json has no engines.node')
const floors = new semver.Range(promised).set.map(
  (comparators) => semver.minVersion(comparators.map((c) => c.value).join(' ')).version,
)
const lock = JSON.parse(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8'))
const refused = []
for (const [where, entry] of Object.entries(lock.packages ?? {})) {
  const range = entry.engines?.node
  if (!where || typeof range !== 'string') continue
  for (const floor of floors) {
    if (!semver.satisfies(floor, range))
      refused.push(`${where.replace(/^.*node_modules\//, '')} ${entry.version} wants Node ${range}, refusing ${floor}`)
  }
}
if (refused.length) {
  console.error(
    `Node ${floors.join(' and ')} (package.json's engines: ${promised}) are refused by:\n  ${refused.join('\n  ')}`,
  )
  process.exit(1)
}
console.log(`every package accepts Node ${floors.join(' and ')}`)
