// `npm run generate:env-example`: .env.example from the settings' schema (src/config.ts).
// test/env-example.test.ts fails when the committed file differs from a fresh generation.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { envExample } from '../src/config.ts'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const ENV_EXAMPLE = path.join(root, '.env.example')

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(ENV_EXAMPLE, envExample())
  process.stdout.write(`Wrote ${path.relative(root, ENV_EXAMPLE)}\n`)
}
