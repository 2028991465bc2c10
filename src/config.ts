import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'
import { isCountry } from './modules/companies/countries.ts'
import { vatTable } from './modules/subscriptions/billing/vat.ts'
import { isCurrency } from './money.ts'
import { isIP } from 'node:net'

/**
 * Running behind a load balancer and being watched (docs/operations.md): a block of its own so
 * that settings other areas add stay apart from these.
 */
const OPERATIONS_SETTINGS = {
  // Which proxies' X-Forwarded-For is believed (Fastify's trustProxy): unset none, a hop count,
  // or addresses/CIDRs comma-separated; see trustProxy() below.
  TRUST_PROXY: Type.String({ default: '' }),
  // Load shedding (@fastify/under-pressure): API routes answer 503 + Retry-After beyond these; 0 (the default) turns a check off.
  // Requests worked on at once per instance beyond which a new one gets 503 + Retry-After: 1; 0 turns the bound off.
  SHED_MAX_IN_FLIGHT: Type.Integer({ minimum: 0, default: 64 }),
  SHED_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, default: 0 }),
  SHED_HEAP_USED_BYTES: Type.Integer({ minimum: 0, default: 0 }),
  SHED_RETRY_AFTER_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 10 }),
  // SIGTERM: /ready answers 503 at once, requests are still served for SHUTDOWN_DELAY_MS (the
  // balancer's time to notice), then the listener closes and requests in flight get up to
  // SHUTDOWN_TIMEOUT_MS to finish before the process exits anyway.
  SHUTDOWN_DELAY_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 0 }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600_000, default: 9000 }),
  // When set, /metrics answers only a request with `Authorization: Bearer <METRICS_TOKEN>`.
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
}

/** Every setting the service reads, with its default. The one place that reads process.env. */
const ConfigSchema = Type.Object({
  ...OPERATIONS_SETTINGS,
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.String({ default: '0.0.0.0' }),
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  DATA_DIR: Type.String({ default: './data' }),
  DB_POOL_SIZE: Type.Integer({ minimum: 1, default: 10 }),
  // How long one statement of a request may take on PostgreSQL (the server cancels it), and, a
  // second more, how long this process waits for its answer or for a pooled connection before
  // answering 503 `unavailable`: a network that hangs instead of failing holds a request no longer.
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 5000 }),
  // The same bound for the scheduler's jobs (a retention sweep deletes thousands of rows at once).
  DATABASE_JOB_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 3_600_000, default: 60_000 }),
  // V8 tuned for memory rather than speed (src/v8-memory.ts): 'auto' is on for PGlite, off for PostgreSQL.
  V8_SMALL_HEAP: Type.Union([Type.Literal('auto'), Type.Literal('on'), Type.Literal('off')], { default: 'auto' }),
  // Spelled out: a mapped array loses the literal types, and Config['LOG_LEVEL'] with them.
  LOG_LEVEL: Type.Union([
    Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'),
    Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent'),
  ], { default: 'info' }),
  PUBLIC_BASE_URL: Type.Optional(Type.String()),
  ADMIN_CLIENT_ID: Type.Optional(Type.String({ minLength: 1 })),
  ADMIN_CLIENT_SECRET: Type.Optional(Type.String({ minLength: 16 })),
  TOKEN_ISSUER: Type.String({ default: 'company-admin-api' }),
  TOKEN_AUDIENCE: Type.String({ default: 'company-admin-api' }),
  TOKEN_TTL_SECONDS: Type.Integer({ minimum: 60, maximum: 86400, default: 3600 }),
  // Signing-key rotation (docs/operations.md, "Signing keys"): every N days, 0 for only by hand
  // (npm run rotate-key); the next key is published this long before it signs.
  SIGNING_KEY_ROTATION_DAYS: Type.Integer({ minimum: 0, maximum: 3650, default: 90 }),
  SIGNING_KEY_PUBLISH_AHEAD_SECONDS: Type.Integer({ minimum: 600, default: 86400 }),
  TRIAL_DAYS: Type.Integer({ minimum: 0, maximum: 365, default: 30 }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 1048576 }),
  RATE_LIMIT_MAX: Type.Integer({ minimum: 0, default: 6000 }),
  RATE_LIMIT_WINDOW_SECONDS: Type.Integer({ minimum: 1, default: 60 }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 30000 }),
  // A client must have sent all its headers within this time (slow-header clients are closed).
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 10000 }),
  SCHEDULER_ENABLED: Type.Boolean({ default: true }),
  SCHEDULER_POLL_MS: Type.Integer({ minimum: 10, default: 1000 }),
  SCHEDULER_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
  // The test clock's routes (docs/test-clock.md): never in production, where they would let a
  // platform client renew and charge every subscription ahead of time.
  TEST_CLOCK_ENABLED: Type.Boolean({ default: false }),
  /** Memory for the answers of hot reads kept per process (src/db/read-cache.ts); 0 turns the cache off. */
  READ_CACHE_MAX_BYTES: Type.Integer({ minimum: 0, default: 32 * 1024 * 1024 }),
  REDIRECT_ALLOWED_HOSTS: Type.String({ default: 'localhost,127.0.0.1' }),
  // Rates over the built-in VAT table of the EU-27, CH, NO and GB (src/modules/subscriptions/billing/vat.ts): IT:22,DE:19.
  VAT_RATES: Type.String({ default: '' }),
  // Where the seller is established (ISO 3166-1 alpha-2): a business customer elsewhere whose VAT number is marked valid is reverse-charged.
  SELLER_COUNTRY: Type.String({ default: 'IT', pattern: '^[A-Z]{2}$' }),
  // The seller as its invoices name it (the portal's printable invoices, docs/hosted-pages.md):
  // name, address (lines separated by "|") and VAT identification number with its country prefix.
  SELLER_NAME: Type.String({ default: '', maxLength: 200 }),
  SELLER_ADDRESS: Type.String({ default: '', maxLength: 500 }),
  SELLER_VAT_NUMBER: Type.String({ default: '', pattern: '^([A-Z]{2}[0-9A-Z]{2,13})?$' }),
  // ISO 4217: the currency a new plan, addon or fixed-amount coupon gets when it names none; each price keeps its own.
  CURRENCY_CODE: Type.String({ default: 'EUR', pattern: '^[A-Z]{3}$' }),
  HOSTED_PAGE_TTL_SECONDS: Type.Integer({ minimum: 60, default: 3600 }),
  CHARGEBEE_SITE: Type.Optional(Type.String()),
  CHARGEBEE_API_KEY: Type.Optional(Type.String()),
  CHARGEBEE_WEBHOOK_USER: Type.Optional(Type.String()),
  CHARGEBEE_WEBHOOK_PASSWORD: Type.Optional(Type.String()),
  // Overrides of the Chargebee SDK's host (https://<site>.chargebee.com:443), for a test server; see docs/chargebee.md.
  CHARGEBEE_PROTOCOL: Type.Union([Type.Literal('https'), Type.Literal('http')], { default: 'https' }),
  CHARGEBEE_HOST_SUFFIX: Type.String({ default: '.chargebee.com' }),
  CHARGEBEE_PORT: Type.Integer({ minimum: 1, maximum: 65535, default: 443 }),
  CHARGEBEE_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 15000 }),
  // How often every Chargebee-managed subscription, its invoices and credit notes are compared
  // with Chargebee and corrected (docs/chargebee.md "Reconciliation"); 0 turns it off.
  CHARGEBEE_RECONCILE_INTERVAL_SECONDS: Type.Integer({ minimum: 0, maximum: 604800, default: 3600 }),
  // Retries of a Chargebee call on a network error, timeout, 429 or 5xx (writes with the same idempotency key), the first after CHARGEBEE_RETRY_DELAY_MS, doubling.
  CHARGEBEE_RETRIES: Type.Integer({ minimum: 0, maximum: 10, default: 3 }),
  CHARGEBEE_RETRY_DELAY_MS: Type.Integer({ minimum: 0, maximum: 10000, default: 200 }),
  ATTACHMENT_MAX_BYTES: Type.Integer({ minimum: 1, default: 10 * 1024 * 1024 }),
  // The browser origins allowed to call the API (CORS), comma-separated; none by default (src/http/cors.ts).
  CORS_ORIGINS: Type.String({ default: '' }),
  // Dunning of the local billing engine: days after an invoice's failed first charge on which it
  // is retried; after the last failure the invoice is not_paid and the subscription cancelled.
  DUNNING_RETRY_DAYS: Type.String({ default: '1,3,5' }),
  // Events and outgoing webhooks (docs/webhooks.md): how long the event log keeps an event, how
  // long a receiver has to answer, and whether loopback/private targets (and http) are allowed.
  EVENTS_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 3650, default: 30 }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60000, default: 10000 }),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Type.Boolean({ default: false }),
})

export type Config = Readonly<Static<typeof ConfigSchema>>

/** Parses the environment once; an invalid setting stops the start with a sentence naming it. */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const known = Object.keys(ConfigSchema.properties)
  const raw: Record<string, unknown> = {}
  for (const key of known) if (env[key] !== undefined && env[key] !== '') raw[key] = env[key]
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw)) as Record<string, unknown>
  const merged = { ...converted, ...overrides }
  if (!Value.Check(ConfigSchema, merged)) {
    const first = [...Value.Errors(ConfigSchema, merged)][0]
    const where = first ? String((first as { instancePath?: string }).instancePath ?? '').replace(/^\//, '') : ''
    const choices = (ConfigSchema.properties as Record<string, { anyOf?: Array<{ const?: unknown }> }>)[where]?.anyOf
    const message = choices?.every((c) => c.const !== undefined) ? `must be one of ${choices.map((c) => c.const).join(', ')}` : first?.message ?? 'is invalid'
    throw new Error(`Invalid configuration: ${where || 'setting'} ${message}`)
  }
  // Half of the admin client is a mistake, not a wish for a random one.
  if ((merged.ADMIN_CLIENT_ID === undefined) !== (merged.ADMIN_CLIENT_SECRET === undefined)) {
    throw new Error('Invalid configuration: ADMIN_CLIENT_ID and ADMIN_CLIENT_SECRET must be set together')
  }
  // A key must sign for some time after it is published: the lead is shorter than the period.
  const config = merged as Config
  if (config.SIGNING_KEY_ROTATION_DAYS > 0 && config.SIGNING_KEY_PUBLISH_AHEAD_SECONDS >= config.SIGNING_KEY_ROTATION_DAYS * 86400) {
    throw new Error('Invalid configuration: SIGNING_KEY_PUBLISH_AHEAD_SECONDS must be shorter than SIGNING_KEY_ROTATION_DAYS')
  }
  corsOrigins(config.CORS_ORIGINS)
  vatTable(config.VAT_RATES)
  if (!isCountry(config.SELLER_COUNTRY)) throw new Error(`Invalid configuration: SELLER_COUNTRY ${config.SELLER_COUNTRY} is not an ISO 3166-1 alpha-2 country code`)
  if (!isCurrency(config.CURRENCY_CODE)) throw new Error(`Invalid configuration: CURRENCY_CODE ${config.CURRENCY_CODE} is not an ISO 4217 currency code`)
  dunningRetryDays(config.DUNNING_RETRY_DAYS)
  checkOperationsSettings(config)
  return Object.freeze(config)
}

/**
 * DUNNING_RETRY_DAYS as days after the invoice's date, strictly increasing: `1,3,5`. Empty: no
 * retry (a failed charge leaves the invoice not_paid at once). At most 10 retries within a year.
 */
export function dunningRetryDays(setting: string): number[] {
  const entries = setting.split(',').map((s) => s.trim()).filter(Boolean)
  const days = entries.map(Number)
  const refuse = () => new Error(`Invalid configuration: DUNNING_RETRY_DAYS must be increasing whole days from 1 to 365, comma-separated (at most 10), like 1,3,5; got "${setting}"`)
  if (days.length > 10 || entries.some((e) => !/^\d{1,3}$/.test(e))) throw refuse()
  if (days.some((d, i) => d < 1 || d > 365 || (i > 0 && d <= days[i - 1]!))) throw refuse()
  return days
}

/**
 * The checks a type cannot say, each refusing the start with a sentence naming the setting: a
 * wrong URL would otherwise surface later as a 500 or a bare getaddrinfo error.
 */
function checkOperationsSettings(config: Config) {
  if (config.PUBLIC_BASE_URL !== undefined && !isHttpUrl(config.PUBLIC_BASE_URL)) {
    throw new Error(`Invalid configuration: PUBLIC_BASE_URL "${config.PUBLIC_BASE_URL}" must be an absolute http(s) URL like https://api.example.com`)
  }
  if (config.DATABASE_URL !== undefined) {
    let url: URL | undefined
    try { url = new URL(config.DATABASE_URL) } catch { /* refused below */ }
    if (!url || !['postgres:', 'postgresql:'].includes(url.protocol)) {
      throw new Error('Invalid configuration: DATABASE_URL must be a PostgreSQL URL like postgres://user:password@host:5432/database')
    }
  }
  if (config.HEADERS_TIMEOUT_MS > config.REQUEST_TIMEOUT_MS) {
    throw new Error(`Invalid configuration: HEADERS_TIMEOUT_MS (${config.HEADERS_TIMEOUT_MS}) must not exceed REQUEST_TIMEOUT_MS (${config.REQUEST_TIMEOUT_MS})`)
  }
  // Each scheduler worker holds a pooled connection for its whole job (a sweep, a slow Chargebee):
  // at most half the pool, so that API requests always find the other half (docs/operations.md).
  // PGlite runs one job at a time in its one session, so the check is PostgreSQL's.
  if (config.DATABASE_URL !== undefined && config.SCHEDULER_ENABLED && config.SCHEDULER_CONCURRENCY > Math.floor(config.DB_POOL_SIZE / 2)) {
    throw new Error(`Invalid configuration: SCHEDULER_CONCURRENCY (${config.SCHEDULER_CONCURRENCY}) must be at most half of DB_POOL_SIZE (${config.DB_POOL_SIZE}), so that API requests keep connections while jobs run; lower SCHEDULER_CONCURRENCY or raise DB_POOL_SIZE`)
  }
  trustProxy(config.TRUST_PROXY)
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== ''
  } catch {
    return false
  }
}

/**
 * TRUST_PROXY as Fastify's trustProxy: '' trusts no proxy (the socket's address is the client's);
 * addresses or CIDRs of the proxies (the safe form); or a hop count N, the number of proxies in
 * front of the service, whose addresses are then trusted whatever they are. Fastify 5.12 refuses
 * a bare number (it cannot check the immediate peer), so the count is a function here: safe only
 * when nothing reaches the service except through those proxies (docs/operations.md).
 */
export function trustProxy(setting: string): false | string[] | ((address: string, hop: number) => boolean) {
  const value = setting.trim()
  if (value === '' || value === 'false') return false
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    return (_address, hop) => hop < hops
  }
  const entries = value.split(',').map((e) => e.trim()).filter((e) => e !== '')
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/')
    const family = isIP(address ?? '')
    const maxBits = family === 6 ? 128 : 32
    if (family === 0 || extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= maxBits))) {
      throw new Error(`Invalid configuration: TRUST_PROXY entry "${entry}" must be a hop count, or addresses or CIDRs like 10.0.0.0/8, comma-separated`)
    }
  }
  return entries
}

/**
 * The origins of CORS_ORIGINS, each as a browser sends it in Origin: `scheme://host[:port]`,
 * lower case, without the scheme's default port. Blank entries are skipped; an entry with a
 * path, query, credentials, another scheme than http(s), or `*`, is refused with a sentence
 * naming the setting (an origin is compared whole, so a path would silently never match).
 */
export function corsOrigins(setting: string): string[] {
  const origins: string[] = []
  for (const raw of setting.split(',')) {
    const entry = raw.trim()
    if (entry === '') continue
    const refuse = () => new Error(`Invalid configuration: CORS_ORIGINS entry "${entry}" must be an origin like https://app.example.com (scheme://host[:port], no path)`)
    if (!/^https?:\/\/[^/?#@\s]+$/i.test(entry)) throw refuse()
    let url: URL
    try { url = new URL(entry) } catch { throw refuse() }
    origins.push(url.origin)
  }
  return origins
}
