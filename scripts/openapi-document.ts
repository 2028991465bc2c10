// The OpenAPI document the service serves at /openapi.json, built in-process (no server, no
// configured database): the app on a throw-away PGlite in a temporary directory.
// `node --import tsx scripts/openapi-document.ts [file]` writes it (stdout without a file).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../src/config.ts'
import { buildApp } from '../src/app.ts'
import { createDatabase } from '../src/db/database.ts'

export async function buildOpenApiDocument(): Promise<Record<string, unknown>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-'))
  try {
    const database = await createDatabase({ dataDir: dir, poolSize: 1 })
    try {
      const config = loadConfig({}, { LOG_LEVEL: 'silent', SCHEDULER_ENABLED: false })
      const app = await buildApp({ config, database, logger: false })
      try {
        await app.ready()
        const res = await app.inject({ method: 'GET', url: '/openapi.json' })
        if (res.statusCode !== 200) throw new Error(`/openapi.json answered ${res.statusCode}: ${res.body}`)
        return res.json()
      } finally {
        await app.close()
      }
    } finally {
      await database.close()
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = `${JSON.stringify(await buildOpenApiDocument(), null, 2)}\n`
  if (process.argv[2]) fs.writeFileSync(process.argv[2], text)
  else process.stdout.write(text)
}
