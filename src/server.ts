import { loadConfig } from './config.ts'
import { buildApp } from './app.ts'
import { installShutdown } from './http/shutdown.ts'
import { tuneV8ForMemory } from './v8-memory.ts'

async function main() {
  const config = loadConfig()
  // Before buildApp, which imports and boots PGlite.
  tuneV8ForMemory(config)
  const app = await buildApp({ config })
  const admin = app.services.oauth.ensureAdminClient({ id: config.ADMIN_CLIENT_ID, secret: config.ADMIN_CLIENT_SECRET })
  admin.catch(() => undefined) // awaited below; a failure meanwhile is not an unhandled rejection
  if (config.ADMIN_CLIENT_ID === undefined) {
    const created = await admin
    if (created) {
      // Shown once: only the hash is stored. On stderr, outside the JSON log, so no collector keeps it.
      process.stderr.write(
        `\nA platform client was created for this new database. Keep its secret now; it is not shown again.\n` +
          `  client_id:     ${created.client_id}\n  client_secret: ${created.client_secret}\n\n`,
      )
    }
  }
  // The configured platform client's secret is settled after listen (scrypt is slow); token requests
  // for that client wait for it. If settling fails, the start fails.
  await app.listen({ port: config.PORT, host: config.HOST })
  installShutdown(app, app.readiness, { delayMs: config.SHUTDOWN_DELAY_MS, timeoutMs: config.SHUTDOWN_TIMEOUT_MS })
  await admin
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
