import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildApp, type BuiltApp } from '../../src/app.ts'
import { loadConfig, type Config } from '../../src/config.ts'
import { manualClock, type ManualClock } from '../../src/core/clock.ts'
import type { Engine } from '../../src/db/database.ts'
import { sql } from 'kysely'
import { openTestDatabase, withDatabase } from './databases.ts'

export { engines } from './databases.ts'

export const ADMIN = { client_id: 'test-admin', client_secret: 'test-admin-secret-0123456789' }

export interface Call {
  method?: InjectOptions['method']
  url: string
  token?: string | null
  body?: unknown
  headers?: Record<string, string>
  query?: Record<string, string | string[]>
}

export interface TestApp {
  app: BuiltApp
  engine: Engine
  /** The business clock's base (billing, communications, hosted pages): moving it leaves tokens valid. */
  clock: ManualClock
  /** Real time (tokens, signing keys, idempotency keys): tests of expiries move it. */
  realClock: ManualClock
  /** A platform client's token with every scope. */
  platformToken: string
  /** Sends a request through the app; `token` defaults to the platform token (null: none). */
  call(request: Call): Promise<LightMyRequestResponse>
  /** Like call, then fails the test unless the status is the one expected; returns the parsed JSON body. */
  json<T = any>(status: number, request: Call): Promise<T>
  tokenFor(clientId: string, clientSecret: string, scope?: string): Promise<string>
  close(): Promise<void>
}

/**
 * The app on a fresh database of the engine, with two clocks that stand still until a test
 * moves them (the business clock's base, and real time for tokens and idempotency keys), the scheduler stopped (tests run due jobs with app.services.scheduler.runDue()), no
 * rate limit unless a test asks for one, and no log unless it gives a logger.
 */
export async function buildTestApp(
  engine: Engine,
  overrides: Partial<Config> = {},
  options: { logger?: FastifyBaseLogger } = {},
): Promise<TestApp> {
  const config = loadConfig(
    {},
    {
      LOG_LEVEL: 'silent',
      SCHEDULER_ENABLED: false,
      RATE_LIMIT_MAX: 0,
      ADMIN_CLIENT_ID: ADMIN.client_id,
      ADMIN_CLIENT_SECRET: ADMIN.client_secret,
      ...overrides,
    },
  )
  // A test of the pool's limits gives DB_POOL_SIZE; the others get the default of 10.
  const database = await openTestDatabase(engine, overrides.DB_POOL_SIZE)
  const clock = manualClock(new Date())
  const realClock = manualClock(new Date())
  // A test that reads the log gives its own logger (hosted-logs.test.ts); the others log nothing.
  const app = await buildApp({ config, database, clock, realClock, logger: options.logger ?? false })
  await app.services.oauth.ensureAdminClient({ id: ADMIN.client_id, secret: ADMIN.client_secret })
  await app.ready()

  async function tokenFor(clientId: string, clientSecret: string, scope?: string) {
    const res = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: {
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: clientSecret,
        ...(scope ? { scope } : {}),
      },
    })
    if (res.statusCode !== 200) throw new Error(`token for ${clientId}: ${res.statusCode} ${res.body}`)
    return res.json().access_token as string
  }

  const platformToken = await tokenFor(ADMIN.client_id, ADMIN.client_secret)

  async function call(request: Call) {
    const token = request.token === undefined ? platformToken : request.token
    return app.inject({
      method: request.method ?? 'GET',
      url: request.url,
      query: request.query,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...request.headers },
      ...(request.body !== undefined ? { payload: request.body as InjectOptions['payload'] } : {}),
    })
  }

  return {
    app,
    engine,
    clock,
    realClock,
    platformToken,
    call,
    tokenFor,
    async json(status, request) {
      const res = await call(request)
      if (res.statusCode !== status) {
        throw new Error(
          `${request.method ?? 'GET'} ${request.url}: expected ${status}, got ${res.statusCode} ${res.body}`,
        )
      }
      // A 202 has no body: undefined, typed as what the caller expects.
      return (res.body === '' ? undefined : res.json()) as never
    },
    async close() {
      await app.close()
      await database.close()
      await database.drop()
    },
  }
}

/** The id at the end of a creation's Location header. */
export function locationId(res: LightMyRequestResponse): string {
  const location = res.headers.location
  if (typeof location !== 'string') throw new Error(`no Location header (status ${res.statusCode}: ${res.body})`)
  return location.split('/').pop()!
}

export const uniq = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`

/**
 * A second instance of the service on a PostgreSQL test app's database (no scheduler, no rate
 * limit, silent, on the same clock): what tests of changes heard across instances read through.
 */
export async function secondInstance(t: TestApp): Promise<BuiltApp> {
  const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!.name
  const second = await buildApp({
    config: loadConfig(
      {},
      {
        DATABASE_URL: withDatabase(process.env.TEST_DATABASE_URL!, name),
        SCHEDULER_ENABLED: false,
        RATE_LIMIT_MAX: 0,
        LOG_LEVEL: 'silent',
      },
    ),
    clock: t.clock,
    logger: false,
  })
  await second.ready()
  return second
}
