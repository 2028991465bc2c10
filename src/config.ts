import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'
import { isCountry } from './modules/companies/countries.ts'
import { vatTable } from './modules/billing/index.ts'
import { isCurrency } from './core/money.ts'
import { corsOrigins, dunningRetryDays, isHttpUrl, trustProxy } from './config-values.ts'
import { missingSellerSettings, partlyGiven, SELLER_SETTINGS } from './config-seller.ts'

export { corsOrigins, dunningRetryDays, trustProxy } from './config-values.ts'

// Settings for running behind a load balancer (docs/operations.md). Each description is the line
// .env.example shows above the setting.
const OPERATIONS_SETTINGS = {
  // A hop count is trusted only behind proxies nothing bypasses (trustProxy()).
  TRUST_PROXY: Type.String({
    default: '',
    description:
      "The proxies whose X-Forwarded-For gives the client's address: addresses or CIDRs (10.0.0.0/8,127.0.0.1), " +
      "or a hop count; empty: the connection's address",
  }),
  // API routes answer 503 + Retry-After beyond these; 0 turns a check off.
  SHED_MAX_IN_FLIGHT: Type.Integer({
    minimum: 0,
    default: 64,
    description:
      'Requests worked on at once per instance; the next gets 503 and Retry-After: 1 (0: no bound; never ' +
      '/health, /ready, /metrics)',
  }),
  SHED_EVENT_LOOP_DELAY_MS: Type.Integer({
    minimum: 0,
    default: 0,
    description: 'API requests get 503 and Retry-After while the mean event-loop delay is above this (0: not checked)',
  }),
  SHED_HEAP_USED_BYTES: Type.Integer({
    minimum: 0,
    default: 0,
    description: 'API requests get 503 and Retry-After while the V8 heap in use is above this (0: not checked)',
  }),
  SHED_RETRY_AFTER_SECONDS: Type.Integer({
    minimum: 1,
    maximum: 3600,
    default: 10,
    description: 'The Retry-After of a request shed on the event-loop delay or the heap',
  }),
  // SIGTERM: /ready answers 503 at once, requests are served for SHUTDOWN_DELAY_MS, then those in
  // flight get SHUTDOWN_TIMEOUT_MS before the process exits.
  SHUTDOWN_DELAY_MS: Type.Integer({
    minimum: 0,
    maximum: 600_000,
    default: 0,
    description:
      "After SIGTERM, how long requests are still served while /ready answers 503 (the balancer's time to notice)",
  }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    maximum: 600_000,
    default: 9000,
    description: 'After SHUTDOWN_DELAY_MS, how long requests in flight may take before the process exits 1',
  }),
  METRICS_TOKEN: Type.Optional(
    Type.String({
      minLength: 16,
      description: 'When set (16+ characters), /metrics needs Authorization: Bearer <METRICS_TOKEN>',
    }),
  ),
}

/** Every setting the service reads; the one place that reads process.env. */
const ConfigSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'The TCP port the API listens on' }),
  HOST: Type.String({ default: '0.0.0.0', description: 'The address the API listens on' }),
  DATABASE_URL: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'A PostgreSQL server (postgres://user:password@host:5432/db); unset: the embedded PGlite in DATA_DIR',
    }),
  ),
  DATA_DIR: Type.String({
    default: './data',
    description: "The embedded database's directory (locked against a second process)",
  }),
  DB_POOL_SIZE: Type.Integer({ minimum: 1, default: 10, description: 'Connections to PostgreSQL per instance' }),
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 5000,
    description:
      "PostgreSQL: the longest a request's statement runs, or a free connection is waited for (then 503 unavailable)",
  }),
  // Retention sweeps delete thousands of rows at once: jobs get a bound of their own.
  DATABASE_JOB_STATEMENT_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 3_600_000,
    default: 60_000,
    description: "The same bound for the scheduler's jobs and ANALYZE; migrations have none",
  }),
  V8_SMALL_HEAP: Type.Union([Type.Literal('auto'), Type.Literal('on'), Type.Literal('off')], {
    default: 'auto',
    description:
      'V8 set for memory rather than speed (src/v8-memory.ts): auto is on with PGlite, off with DATABASE_URL',
  }),
  // Spelled out: a mapped array loses the literal types.
  LOG_LEVEL: Type.Union(
    [
      Type.Literal('fatal'),
      Type.Literal('error'),
      Type.Literal('warn'),
      Type.Literal('info'),
      Type.Literal('debug'),
      Type.Literal('trace'),
      Type.Literal('silent'),
    ],
    { default: 'info', description: 'The pino log level (silent to mute)' },
  ),
  PUBLIC_BASE_URL: Type.Optional(
    Type.String({
      description: "The service's public http(s) URL, for the OpenAPI servers and hosted pages; set it behind a proxy",
    }),
  ),
  ADMIN_CLIENT_ID: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'The platform client to create at start-up, with ADMIN_CLIENT_SECRET; unset: one is made and printed once',
    }),
  ),
  ADMIN_CLIENT_SECRET: Type.Optional(
    Type.String({ minLength: 16, description: 'The secret of ADMIN_CLIENT_ID (16+ characters)' }),
  ),
  TOKEN_ISSUER: Type.String({ default: 'company-admin-api', description: 'The iss of the access tokens' }),
  TOKEN_AUDIENCE: Type.String({ default: 'company-admin-api', description: 'The aud of the access tokens' }),
  TOKEN_TTL_SECONDS: Type.Integer({
    minimum: 60,
    maximum: 86400,
    default: 3600,
    description: 'The lifetime of an access token',
  }),
  SIGNING_KEY_ROTATION_DAYS: Type.Integer({
    minimum: 0,
    maximum: 3650,
    default: 90,
    description:
      'A new token-signing key every N days (0: only with npm run rotate-key; docs/operations.md, "Signing keys")',
  }),
  SIGNING_KEY_PUBLISH_AHEAD_SECONDS: Type.Integer({
    minimum: 600,
    default: 86400,
    description: 'How long a new signing key is published in the key set before it signs',
  }),
  TRIAL_DAYS: Type.Integer({
    minimum: 0,
    maximum: 365,
    default: 30,
    description: "The length of a new company's trial",
  }),
  BODY_LIMIT_BYTES: Type.Integer({
    minimum: 1024,
    default: 1048576,
    description: 'The largest JSON body (413 above); the token endpoint takes 8 KiB at most',
  }),
  RATE_LIMIT_MAX: Type.Integer({
    minimum: 0,
    default: 6000,
    description: 'Requests per token (or address) per window (0: no limit)',
  }),
  RATE_LIMIT_WINDOW_SECONDS: Type.Integer({ minimum: 1, default: 60, description: 'The window of RATE_LIMIT_MAX' }),
  REQUEST_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    default: 30000,
    description: 'A request that has not arrived whole by then is closed',
  }),
  HEADERS_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    default: 10000,
    description:
      'A client that has not sent all its headers by then gets 408 and is closed (at most REQUEST_TIMEOUT_MS)',
  }),
  SCHEDULER_ENABLED: Type.Boolean({
    default: true,
    description: 'Whether this process runs the job runner (deliveries, renewals)',
  }),
  SCHEDULER_POLL_MS: Type.Integer({
    minimum: 10,
    default: 1000,
    description: 'How often the job runner looks for due jobs',
  }),
  SCHEDULER_CONCURRENCY: Type.Integer({
    minimum: 1,
    maximum: 64,
    default: 4,
    description: 'Jobs claimed at once on PostgreSQL (1 on PGlite); at most half of DB_POOL_SIZE',
  }),
  // It would let a platform client renew and charge every subscription ahead of time.
  TEST_CLOCK_ENABLED: Type.Boolean({
    default: false,
    description:
      "Test environments only: the test clock's routes that move the business time forward (docs/test-clock.md)",
  }),
  READ_CACHE_MAX_BYTES: Type.Integer({
    minimum: 0,
    default: 32 * 1024 * 1024,
    description: 'Memory for the cached answers of hot reads, per process (0: no cache)',
  }),
  REDIRECT_ALLOWED_HOSTS: Type.String({
    default: 'localhost,127.0.0.1',
    description: 'The hosts a redirect_url of the billing pages may name, comma-separated',
  }),
  VAT_RATES: Type.String({
    default: '',
    description: 'VAT rates over the built-in table of the EU-27, CH, NO and GB, like IT:22,DE:19',
  }),
  ...SELLER_SETTINGS,
  CURRENCY_CODE: Type.String({
    default: 'EUR',
    pattern: '^[A-Z]{3}$',
    description: 'The ISO 4217 currency of a new plan, addon or fixed-amount coupon that names none',
  }),
  HOSTED_PAGE_TTL_SECONDS: Type.Integer({
    minimum: 60,
    default: 3600,
    description: 'The lifetime of hosted pages and portal sessions',
  }),
  CHARGEBEE_SITE: Type.Optional(
    Type.String({ description: 'The Chargebee site, for products whose subscription_manager is chargebee' }),
  ),
  CHARGEBEE_API_KEY: Type.Optional(Type.String({ description: 'The API key of CHARGEBEE_SITE' })),
  CHARGEBEE_WEBHOOK_USER: Type.Optional(
    Type.String({ description: "The HTTP Basic user Chargebee's webhooks must send" }),
  ),
  CHARGEBEE_WEBHOOK_PASSWORD: Type.Optional(
    Type.String({ description: "The HTTP Basic password Chargebee's webhooks must send" }),
  ),
  // Only tests change where the SDK connects (a local fake Chargebee).
  CHARGEBEE_PROTOCOL: Type.Union([Type.Literal('https'), Type.Literal('http')], {
    default: 'https',
    description: 'The scheme of the Chargebee API (tests only)',
  }),
  CHARGEBEE_HOST_SUFFIX: Type.String({
    default: '.chargebee.com',
    description: "What follows the site in the Chargebee API's host name (tests only)",
  }),
  CHARGEBEE_PORT: Type.Integer({
    minimum: 1,
    maximum: 65535,
    default: 443,
    description: 'The port of the Chargebee API (tests only)',
  }),
  CHARGEBEE_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    default: 15000,
    description: 'The timeout of one attempt of a Chargebee call (a timeout is retried)',
  }),
  CHARGEBEE_RECONCILE_INTERVAL_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 604800,
    default: 3600,
    description:
      'How often Chargebee-managed subscriptions, invoices and credit notes are compared with Chargebee (0: never)',
  }),
  CHARGEBEE_RETRIES: Type.Integer({
    minimum: 0,
    maximum: 10,
    default: 3,
    description:
      'Retries of a Chargebee call on a network error, timeout, 429 or 5xx (a write keeps its idempotency key)',
  }),
  CHARGEBEE_RETRY_DELAY_MS: Type.Integer({
    minimum: 0,
    maximum: 10000,
    default: 200,
    description: "The pause before a Chargebee call's first retry, doubling up to 2 s",
  }),
  ATTACHMENT_MAX_BYTES: Type.Integer({
    minimum: 1,
    default: 10 * 1024 * 1024,
    description: 'The largest communication attachment',
  }),
  CORS_ORIGINS: Type.String({
    default: '',
    description:
      'The browser origins allowed to call the API, comma-separated (https://app.example.com); empty: no CORS headers',
  }),
  DUNNING_RETRY_DAYS: Type.String({
    default: '1,3,5',
    description:
      "Days after a failed invoice's date on which its charge is retried; after the last, not_paid and cancelled",
  }),
  EVENTS_RETENTION_DAYS: Type.Integer({
    minimum: 1,
    maximum: 3650,
    default: 30,
    description: 'How long the event log keeps an event, with its deliveries (docs/webhooks.md)',
  }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 60000,
    default: 10000,
    description: 'How long a webhook receiver has to answer an attempt',
  }),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Type.Boolean({
    default: false,
    description: 'Development and tests only: webhook endpoints may use http and loopback or private addresses',
  }),
  ...OPERATIONS_SETTINGS,
})

export type Config = Readonly<Static<typeof ConfigSchema>>

export const SETTINGS = ConfigSchema.properties as unknown as Readonly<
  Record<string, { default?: unknown; description?: string }>
>

/**
 * The text of .env.example: each setting's description above its default, commented out, so a
 * copy changes nothing. A setting without a description stops the generation.
 */
export function envExample(): string {
  const lines = [
    '# The settings of company-admin-api: environment variables, read once at start-up.',
    '# Generated from src/config.ts by `npm run generate:env-example`: edit the schema there, not this file.',
    '# Each line shows the default; uncomment and change the ones you need (an empty value is the default too).',
    '# README.md, "Configuration", and docs/operations.md say more about each.',
  ]
  for (const [name, schema] of Object.entries(SETTINGS)) {
    if (!schema.description || /\n/.test(schema.description))
      throw new Error(`The setting ${name} needs a one-line description in src/config.ts`)
    lines.push('', `# ${schema.description}`, `# ${name}=${schema.default === undefined ? '' : String(schema.default)}`)
  }
  return `${lines.join('\n')}\n`
}

/** Parses the environment once; an invalid setting stops the start with a sentence naming it. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Config> = {},
): Config {
  const known = Object.keys(ConfigSchema.properties)
  const raw: Record<string, unknown> = {}
  for (const key of known) if (env[key] !== undefined && env[key] !== '') raw[key] = env[key]
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw)) as Record<string, unknown>
  const merged = { ...converted, ...overrides }
  if (!Value.Check(ConfigSchema, merged)) {
    const first = [...Value.Errors(ConfigSchema, merged)][0]
    const where = first ? String((first as { instancePath?: string }).instancePath ?? '').replace(/^\//, '') : ''
    const choices = (ConfigSchema.properties as Record<string, { anyOf?: Array<{ const?: unknown }> }>)[where]?.anyOf
    const message = choices?.every((c) => c.const !== undefined)
      ? `must be one of ${choices.map((c) => c.const).join(', ')}`
      : (first?.message ?? 'is invalid')
    throw new Error(`Invalid configuration: ${where || 'setting'} ${message}`)
  }
  // Half of the admin client is a mistake, not a wish for a random one.
  if ((merged.ADMIN_CLIENT_ID === undefined) !== (merged.ADMIN_CLIENT_SECRET === undefined)) {
    throw new Error('Invalid configuration: ADMIN_CLIENT_ID and ADMIN_CLIENT_SECRET must be set together')
  }
  // A key must sign for some time after it is published: the lead is shorter than the period.
  const config = merged as Config
  if (
    config.SIGNING_KEY_ROTATION_DAYS > 0 &&
    config.SIGNING_KEY_PUBLISH_AHEAD_SECONDS >= config.SIGNING_KEY_ROTATION_DAYS * 86400
  ) {
    throw new Error(
      'Invalid configuration: SIGNING_KEY_PUBLISH_AHEAD_SECONDS must be shorter than SIGNING_KEY_ROTATION_DAYS',
    )
  }
  corsOrigins(config.CORS_ORIGINS)
  vatTable(config.VAT_RATES)
  if (!isCountry(config.SELLER_COUNTRY))
    throw new Error(
      `Invalid configuration: SELLER_COUNTRY ${config.SELLER_COUNTRY} is not an ISO 3166-1 alpha-2 country code`,
    )
  const missing = missingSellerSettings(config)
  if (partlyGiven(config, missing))
    throw new Error(
      `Invalid configuration: SELLER_COUNTRY=IT makes FatturaPA documents, which need ${missing.join(', ')}`,
    )
  if (!isCurrency(config.CURRENCY_CODE))
    throw new Error(`Invalid configuration: CURRENCY_CODE ${config.CURRENCY_CODE} is not an ISO 4217 currency code`)
  dunningRetryDays(config.DUNNING_RETRY_DAYS)
  checkOperationsSettings(config)
  return Object.freeze(config)
}

// Checks a type cannot say: a wrong URL would otherwise surface later as a 500.
function checkOperationsSettings(config: Config) {
  if (config.PUBLIC_BASE_URL !== undefined && !isHttpUrl(config.PUBLIC_BASE_URL)) {
    throw new Error(
      `Invalid configuration: PUBLIC_BASE_URL "${config.PUBLIC_BASE_URL}" must be an absolute http(s) URL like ` +
        `https://api.example.com`,
    )
  }
  if (config.DATABASE_URL !== undefined) {
    let url: URL | undefined
    try {
      url = new URL(config.DATABASE_URL)
    } catch {
      /* refused below */
    }
    if (!url || !['postgres:', 'postgresql:'].includes(url.protocol)) {
      throw new Error(
        'Invalid configuration: DATABASE_URL must be a PostgreSQL URL like postgres://user:password@host:5432/database',
      )
    }
  }
  if (config.HEADERS_TIMEOUT_MS > config.REQUEST_TIMEOUT_MS) {
    throw new Error(
      `Invalid configuration: HEADERS_TIMEOUT_MS (${config.HEADERS_TIMEOUT_MS}) must not exceed ` +
        `REQUEST_TIMEOUT_MS (${config.REQUEST_TIMEOUT_MS})`,
    )
  }
  // Each scheduler worker holds a connection for its whole job: at most half the pool, so API
  // requests always find the other half. PGlite runs one job at a time.
  if (
    config.DATABASE_URL !== undefined &&
    config.SCHEDULER_ENABLED &&
    config.SCHEDULER_CONCURRENCY > Math.floor(config.DB_POOL_SIZE / 2)
  ) {
    throw new Error(
      `Invalid configuration: SCHEDULER_CONCURRENCY (${config.SCHEDULER_CONCURRENCY}) must be at most half of ` +
        `DB_POOL_SIZE (${config.DB_POOL_SIZE}), so that API requests keep connections while jobs run; lower ` +
        `SCHEDULER_CONCURRENCY or raise DB_POOL_SIZE`,
    )
  }
  trustProxy(config.TRUST_PROXY)
}
