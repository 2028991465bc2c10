import { Type } from 'typebox'
import { sql, type Kysely } from 'kysely'
import type { App } from '../../http/app-types.ts'
import { ServiceUnavailable } from '../../http/errors.ts'
import { migrationsApplied } from '../../db/migrate.ts'
import type { DB } from '../../db/tables.ts'

/** Liveness, readiness and the OpenAPI document; none needs a token. */
export async function operationsRoutes(app: App, { db }: { db: Kysely<DB> }) {
  const tags = ['Operations']

  app.get('/health', {
    config: { access: 'none' },
    schema: { operationId: 'health', tags, summary: 'The process is up', response: { 200: Type.Object({ status: Type.Literal('ok') }, { title: 'Health' }) } },
  }, async () => ({ status: 'ok' as const }))

  app.get('/ready', {
    config: { access: 'none' },
    schema: { operationId: 'ready', tags, summary: 'The database answers and every migration is applied', response: { 200: Type.Object({ status: Type.Literal('ready') }, { title: 'Readiness' }) } },
  }, async () => {
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
