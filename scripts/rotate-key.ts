// `npm run rotate-key [-- --now]`: a new token-signing key on the configured database (a PGlite
// DATA_DIR must not be held open by the service meanwhile). Planned by default: published now,
// signing after the publication lead. `--now`, for a leaked key: signs at once and deletes every
// other key. Running instances hear of it by NOTIFY (docs/operations.md, "Signing keys").
import { loadConfig } from '../src/config.ts'
import { tuneV8ForMemory } from '../src/v8-memory.ts'
import { createDatabase } from '../src/db/database.ts'
import { migrate } from '../src/db/migrate.ts'
import { systemClock } from '../src/core/clock.ts'
import { createOauthRepository } from '../src/modules/oauth/oauth.repository.ts'
import { createTokenKeys, tokenSettings } from '../src/modules/oauth/oauth.tokens.ts'

const args = process.argv.slice(2)
const unknown = args.find((a) => a !== '--now')
if (unknown !== undefined) {
  process.stderr.write(`Unknown argument ${unknown}: the only one is --now (the current key leaked)\n`)
  process.exit(2)
}
const config = loadConfig()
// As a server does (src/v8-memory.ts): on PGlite a run that exits soon gains nothing from TurboFan.
tuneV8ForMemory(config)
const database = await createDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: 1 })
try {
  await migrate(database.db, { currencyCode: config.CURRENCY_CODE })
  const keys = createTokenKeys(createOauthRepository(database.db), tokenSettings(config), systemClock)
  const key = await keys.rotate({ immediately: args.includes('--now') })
  process.stdout.write(
    args.includes('--now')
      ? `Key ${key.kid} signs from now; every other key was deleted, and the tokens they signed are refused.\n`
      : `Key ${key.kid} is published and signs from ${key.activeFrom.toISOString()}; the current key verifies until its last token expires.\n`,
  )
} finally {
  await database.close()
}
