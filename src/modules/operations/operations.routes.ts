import { Type } from 'typebox'
import { sql, type Kysely } from 'kysely'
import type { App } from '../../http/app-types.ts'
import { ServiceUnavailable } from '../../http/errors.ts'
import { migrationsApplied } from '../../db/migrate.ts'
import type { DB } from '../../db/tables.ts'
import type { Readiness } from '../../http/shutdown.ts'

/** Liveness, readiness and the OpenAPI document; none needs a token. */
export async function operationsRoutes(app: App, { db, readiness }: { db: Kysely<DB>; readiness: Readiness }) {
  const tags = ['Operations']

  app.get('/health', {
    config: { access: 'none' },
    schema: { operationId: 'health', tags, summary: 'The process is up', response: { 200: Type.Object({ status: Type.Literal('ok') }, { title: 'Health' }) } },
  }, async () => ({ status: 'ok' as const }))

  app.get('/ready', {
    config: { access: 'none' },
    schema: { operationId: 'ready', tags, summary: 'The database answers and every migration is applied',
      description: 'For a load balancer: 200 while this instance takes requests; 503 once it is shutting down (from SIGTERM on, before it stops accepting connections), when the database does not answer, or when a migration is pending. No token.',
      response: { 200: Type.Object({ status: Type.Literal('ready') }, { title: 'Readiness' }) } },
  }, async () => {
    if (readiness.stopping) throw new ServiceUnavailable('The instance is shutting down', 1)
    try {
      await sql`SELECT 1`.execute(db)
      if (!(await migrationsApplied(db))) throw new Error('migrations pending')
    } catch {
      throw new ServiceUnavailable('The database is not ready')
    }
    return { status: 'ready' as const }
  })

  app.get('/openapi.json', { config: { access: 'none' }, schema: { hide: true } }, async () => app.swagger())
}
