// `npm run analytics:rebuild`: writes the revenue analytics' table (analytics_mrr_days) again from the
// subscriptions' history, in one transaction (docs/analytics.md). Exit code 1 with a sentence on stderr
// when it cannot.
import { loadConfig } from '../src/config.ts'
import { createDatabase } from '../src/db/database.ts'
import { createAnalyticsRepository } from '../src/modules/analytics/analytics.repository.ts'
import { createAnalyticsWriter, rebuildAnalytics } from '../src/modules/analytics/index.ts'

try {
  const config = loadConfig()
  const database = await createDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: 1 })
  try {
    const repo = createAnalyticsRepository()
    const companies = await rebuildAnalytics({ db: database.db, repo, writer: createAnalyticsWriter({ repo }) })
    process.stdout.write(`Rebuilt the revenue analytics from the history of ${companies} companies.\n`)
  } finally {
    await database.close()
  }
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
}
