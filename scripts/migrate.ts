// `npm run migrate`: applies pending migrations to the configured database and exits, the deploy
// step before new instances roll out (docs/operations.md, "Deploying"). Exit code 1 with a
// sentence on stderr when the database cannot be made current.
import { loadConfig } from '../src/config.ts'
import { tuneV8ForMemory } from '../src/v8-memory.ts'
import { createDatabase } from '../src/db/database.ts'
import { migrate, readMigrations } from '../src/db/migrate.ts'

try {
  const config = loadConfig()
  // As a server does (src/v8-memory.ts): on PGlite a run that exits soon gains nothing from TurboFan.
  tuneV8ForMemory(config)
  const database = await createDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: 1 })
  try {
    const applied = await migrate(database.db, { currencyCode: config.CURRENCY_CODE })
    const total = readMigrations().length
    process.stdout.write(
      applied.length
        ? `Applied ${applied.length} migration(s): ${applied.join(', ')}. The database is current (${total} migrations).\n`
        : `Nothing to apply: the database is current (${total} migrations).\n`,
    )
  } finally {
    await database.close()
  }
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
}
