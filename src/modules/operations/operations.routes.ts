import { Type } from 'typebox'
import { sql, type Kysely } from 'kysely'
import type { App } from '../../http/app-types.ts'
import { ServiceUnavailable } from '../../core/errors.ts'
import { migrationsApplied } from '../../db/migrate.ts'
import type { DB } from '../../db/tables.ts'
import type { Readiness } from '../../http/shutdown.ts'

// Probes and the OpenAPI document take no token. `/ready` bounds its database probe, so a
// balancer gets its 503 quickly when the database hangs.
export async function operationsRoutes(
  app: App,
  { db, readiness, probeTimeoutMs }: { db: Kysely<DB>; readiness: Readiness; probeTimeoutMs: number },
) {
  const tags = ['Operations']

  // One probe at a time, shared by checks that arrive meanwhile: a hanging database holds one connection.
  let probing: Promise<void> | undefined
  const probe = () =>
    (probing ??= (async () => {
      await sql`SELECT 1`.execute(db)
      if (!(await migrationsApplied(db))) throw new Error('migrations pending')
    })().finally(() => {
      probing = undefined
    }))
  async function databaseReady() {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('no answer in time')), probeTimeoutMs)
    })
    try {
      await Promise.race([probe(), late])
    } finally {
      clearTimeout(timer)
    }
  }

  app.get(
    '/health',
    {
      config: { access: 'none' },
      schema: {
        operationId: 'health',
        tags,
        summary: 'The process is up',
        response: { 200: Type.Object({ status: Type.Literal('ok') }, { title: 'Health' }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  )

  app.get(
    '/ready',
    {
      config: { access: 'none' },
      schema: {
        operationId: 'ready',
        tags,
        summary: 'The database answers and every migration is applied',
        description:
          'For a load balancer: 200 while this instance takes requests; 503 once it is shutting down (from ' +
          'SIGTERM on, before it stops accepting connections), when the database does not answer within 2 s ' +
          '(less when DATABASE_STATEMENT_TIMEOUT_MS is shorter), or when a migration is pending. No token.',
        response: { 200: Type.Object({ status: Type.Literal('ready') }, { title: 'Readiness' }) },
      },
    },
    async () => {
      if (readiness.stopping) throw new ServiceUnavailable('The instance is shutting down', 1)
      try {
        await databaseReady()
      } catch {
        throw new ServiceUnavailable('The database is not ready')
      }
      return { status: 'ready' as const }
    },
  )

  app.get('/openapi.json', { config: { access: 'none' }, schema: { hide: true } }, async () => app.swagger())
}
