import { loadConfig } from './config.ts'
import { buildApp } from './app.ts'
import { installShutdown } from './http/shutdown.ts'
import { tuneV8ForMemory } from './v8-memory.ts'

/** Starts the service: configuration, database and migrations, then listen; SIGTERM drains and closes (http/shutdown.ts). */
async function main() {
  const config = loadConfig()
  // Before buildApp: PGlite is imported, compiled and booted inside it (src/db/database.ts).
  tuneV8ForMemory(config)
  const app = await buildApp({ config })
  const admin = app.services.oauth.ensureAdminClient({ id: config.ADMIN_CLIENT_ID, secret: config.ADMIN_CLIENT_SECRET })
  admin.catch(() => undefined) // awaited below; a failure meanwhile is not an unhandled rejection
  if (config.ADMIN_CLIENT_ID === undefined) {
    const created = await admin
    if (created) {
      // Shown once: only the hash is stored. On stderr as plain text, outside the JSON log lines of
      // stdout, so a log collector does not keep it and LOG_LEVEL does not hide it.
      process.stderr.write(
        `\nA platform client was created for this new database. Keep its secret now; it is not shown again.\n` +
        `  client_id:     ${created.client_id}\n  client_secret: ${created.client_secret}\n\n`,
      )
    }
  }
  // A configured platform client's secret is settled while the server already listens: its scrypt
  // is about a third of a start on one core, and the token endpoint makes a request for that
  // client wait until it is done (oauth.service.ts). If settling fails, the start fails as before.
  await app.listen({ port: config.PORT, host: config.HOST })
  installShutdown(app, app.readiness, { delayMs: config.SHUTDOWN_DELAY_MS, timeoutMs: config.SHUTDOWN_TIMEOUT_MS })
  await admin
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
