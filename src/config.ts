import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'

/** Every setting the service reads, with its default. The one place that reads process.env. */
const ConfigSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.String({ default: '0.0.0.0' }),
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  DATA_DIR: Type.String({ default: './data' }),
  DB_POOL_SIZE: Type.Integer({ minimum: 1, default: 10 }),
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
  /** Memory for the answers of hot reads kept per process (src/db/read-cache.ts); 0 turns the cache off. */
  READ_CACHE_MAX_BYTES: Type.Integer({ minimum: 0, default: 32 * 1024 * 1024 }),
  REDIRECT_ALLOWED_HOSTS: Type.String({ default: 'localhost,127.0.0.1' }),
  VAT_RATES: Type.String({ default: 'IT:22,DE:19,FR:20,ES:21,AT:20,CH:8.1' }),
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
  ATTACHMENT_MAX_BYTES: Type.Integer({ minimum: 1, default: 10 * 1024 * 1024 }),
  // The browser origins allowed to call the API (CORS), comma-separated; none by default (src/http/cors.ts).
  CORS_ORIGINS: Type.String({ default: '' }),
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
  return Object.freeze(config)
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
