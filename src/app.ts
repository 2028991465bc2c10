import type { FastifyBaseLogger } from 'fastify'
import { dunningRetryDays, type Config } from './config.ts'
import { createTransport } from './http/transport.ts'
import { systemClock, type Clock } from './core/clock.ts'
import { createDatabase, type Database } from './db/database.ts'
import { migrate } from './db/migrate.ts'
import { createTableStatistics } from './jobs/table-statistics.ts'
import { createScheduler } from './jobs/scheduler.ts'
import { installRateLimit } from './http/rate-limit.ts'
import { installAuth } from './http/auth.ts'
import { installDocs } from './http/docs.ts'
import { installConsole } from './http/console.ts'
import { installCacheForgetting } from './cache/cached-reads.ts'
import { createReadCache } from './cache/read-cache.ts'
import { installIdempotency } from './http/idempotency.ts'
import { createOauthRepository } from './modules/oauth/oauth.repository.ts'
import { createTokenKeys, tokenSettings } from './modules/oauth/oauth.tokens.ts'
import { createSecretChecker } from './modules/oauth/oauth.secrets.ts'
import { createSecretGuesses } from './modules/oauth/oauth.guesses.ts'
import { createAccessState } from './modules/oauth/oauth.access.ts'
import { createOauthService } from './modules/oauth/oauth.service.ts'
import { createTokenClients } from './modules/oauth/oauth.token-clients.ts'
import { clientRoutes, tokenRoutes } from './modules/oauth/oauth.routes.ts'
import { createCatalogueRepository } from './modules/catalogue/catalogue.repository.ts'
import { createCatalogueService } from './modules/catalogue/catalogue.service.ts'
import { catalogueRoutes } from './modules/catalogue/catalogue.routes.ts'
import { createSubscriptionsRepository } from './modules/subscriptions/subscriptions.repository.ts'
import { createSubscriptionsService } from './modules/subscriptions/subscriptions.service.ts'
import { subscriptionsRoutes } from './modules/subscriptions/subscriptions.routes.ts'
import { createHostedRepository } from './modules/hosted/hosted.repository.ts'
import { createHostedPageStore, listeningOrigin } from './modules/hosted/hosted.pages.ts'
import { createHostedService } from './modules/hosted/hosted.service.ts'
import { hostedRoutes } from './modules/hosted/hosted.pages.routes.ts'
import { hostedApiRoutes } from './modules/hosted/hosted.api.routes.ts'
import { parseAllowedHosts } from './modules/hosted/hosted.redirect.ts'
import { chargebeeFromConfig } from './modules/chargebee/chargebee.provider.ts'
import { createChargebeeReconcileReader } from './modules/chargebee/chargebee.reconcile-reader.ts'
import { createChargebeeReconciliation } from './modules/chargebee/chargebee.reconciliation.ts'
import { createLocalProvider } from './modules/billing/billing.local-provider.ts'
import { createProviderRegistry } from './modules/billing/billing.provider.ts'
import { observedProvider } from './modules/billing/billing.observed-provider.ts'
import { createChargebeeWebhooksRepository } from './modules/chargebee/chargebee-webhooks.repository.ts'
import { createChargebeeWebhooksService } from './modules/chargebee/chargebee-webhooks.service.ts'
import { chargebeeWebhooksRoutes } from './modules/chargebee/chargebee-webhooks.routes.ts'
import { createInvoicesRepository } from './modules/invoices/invoices.repository.ts'
import { createInvoicesService } from './modules/invoices/invoices.service.ts'
import { invoicesRoutes } from './modules/invoices/invoices.routes.ts'
import { createProviderLedgerRepository } from './modules/chargebee/chargebee-ledger.repository.ts'
import { createProviderLedger } from './modules/chargebee/chargebee-ledger.service.ts'
import { createChargebeeMoneyPort } from './modules/chargebee/index.ts'
import { createInvoiceOperationsService } from './modules/invoice-operations/invoice-operations.service.ts'
import { invoiceOperationsRoutes } from './modules/invoice-operations/invoice-operations.routes.ts'
import { createCustomerCreditsService } from './modules/customer-credits/customer-credits.service.ts'
import { customerCreditsRoutes } from './modules/customer-credits/customer-credits.routes.ts'
import { createChargesService } from './modules/charges/charges.service.ts'
import { chargesRoutes } from './modules/charges/charges.routes.ts'
import { createAnalyticsRepository } from './modules/analytics/analytics.repository.ts'
import { createAnalyticsService } from './modules/analytics/analytics.service.ts'
import { analyticsRoutes } from './modules/analytics/analytics.routes.ts'
import { createAnalyticsWriter } from './modules/analytics/index.ts'
import { createInvoiceDocumentsService } from './modules/invoice-documents/invoice-documents.service.ts'
import { invoiceDocumentsRoutes } from './modules/invoice-documents/invoice-documents.routes.ts'
import { createFatturapaService } from './modules/fatturapa/fatturapa.service.ts'
import { createFatturapaRepository } from './modules/fatturapa/fatturapa.repository.ts'
import { fatturapaRoutes } from './modules/fatturapa/fatturapa.routes.ts'
import { fatturapaSeller } from './config-seller.ts'
import { createCompaniesRepository } from './modules/companies/companies.repository.ts'
import { createCompaniesService } from './modules/companies/companies.service.ts'
import { companiesRoutes } from './modules/companies/companies.routes.ts'
import { createCommunicationsRepository } from './modules/communications/communications.repository.ts'
import { createCommunicationDelivery, DELIVERY_JOB } from './modules/communications/communications.delivery.ts'
import { createCommunicationsService } from './modules/communications/communications.service.ts'
import { createMessagesRepository } from './modules/communications/messages.repository.ts'
import { createMessagesService } from './modules/communications/messages.service.ts'
import { createAttachmentsRepository } from './modules/communications/attachments.repository.ts'
import { createAttachmentsService } from './modules/communications/attachments.service.ts'
import { communicationsRoutes } from './modules/communications/communications.routes.ts'
import { createTeamsRepository } from './modules/teams/teams.repository.ts'
import { createTeamsService } from './modules/teams/teams.service.ts'
import { teamsRoutes } from './modules/teams/teams.routes.ts'
import { createHolidaysRepository } from './modules/holidays/holidays.repository.ts'
import { createHolidaysService } from './modules/holidays/holidays.service.ts'
import { createPublicHolidayCalendar } from './modules/holidays/public-holidays.ts'
import { holidaysRoutes } from './modules/holidays/holidays.routes.ts'
import { changeShowsIn } from './cache/read-areas.ts'
import { operationsRoutes } from './modules/operations/operations.routes.ts'
import { createTestClockRepository } from './modules/test-clock/test-clock.repository.ts'
import { createBusinessClock, fixedBusinessClock } from './modules/test-clock/business-clock.ts'
import { createTestClockService } from './modules/test-clock/test-clock.service.ts'
import { testClockRoutes } from './modules/test-clock/test-clock.routes.ts'
import type { StoredEvent, StoredObject } from './modules/events/event-objects.ts'
import { eventsRoutes } from './modules/events/events.routes.ts'
import { webhookEndpointsRoutes } from './modules/webhook-endpoints/webhook-endpoints.routes.ts'
import { createEventServices } from './app-events.ts'

export interface AppOptions {
  config: Config
  /** A database opened by the caller (tests); otherwise opened from the configuration. */
  database?: Database
  /** The business clock's base (tests move it instead of sleeping); the test clock's offset is added when enabled. */
  clock?: Clock
  /** Real time: tokens, signing keys, idempotency keys; never moved by the test clock. */
  realClock?: Clock
  logger?: FastifyBaseLogger | boolean
}

export async function buildApp(options: AppOptions) {
  const { config } = options
  const realClock = options.realClock ?? systemClock
  const database =
    options.database ??
    (await createDatabase({
      databaseUrl: config.DATABASE_URL,
      dataDir: config.DATA_DIR,
      poolSize: config.DB_POOL_SIZE,
      statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    }))
  const ownsDatabase = !options.database
  await migrate(database.db, { currencyCode: config.CURRENCY_CODE })
  const { db } = database
  // The business clock (src/core/clock.ts says which time is which).
  const testClockRepo = createTestClockRepository(db)
  const clock = config.TEST_CLOCK_ENABLED
    ? createBusinessClock({ base: options.clock ?? systemClock, repo: testClockRepo, database })
    : fixedBusinessClock(options.clock ?? systemClock)
  await clock.listen()

  const { app, compilers, readiness, metrics } = await createTransport(config, options.logger)

  const scheduler = createScheduler({
    db,
    clock,
    realClock,
    log: app.log,
    pollMs: config.SCHEDULER_POLL_MS,
    concurrency: database.engine === 'pglite' ? 1 : config.SCHEDULER_CONCURRENCY,
    onFailure: metrics.jobFailed,
    statementTimeoutMs: config.DATABASE_JOB_STATEMENT_TIMEOUT_MS,
  })
  metrics.watch({ backlog: scheduler.backlog, pool: database.poolStats })
  // The queues' tables grow fastest, and their plans suffer first from stale statistics.
  const tableStatistics = createTableStatistics({
    db,
    log: app.log,
    statementTimeoutMs: config.DATABASE_JOB_STATEMENT_TIMEOUT_MS,
  })
  clock.onChange(() => scheduler.wake())

  const oauthRepo = createOauthRepository(db)
  const keys = createTokenKeys(oauthRepo, tokenSettings(config), realClock)
  await keys.load()
  await keys.listen(database)
  const access = createAccessState(oauthRepo, database)
  await access.listen()
  installAuth(app, { keys, access })
  installRateLimit(
    app,
    { max: config.RATE_LIMIT_MAX, windowSeconds: config.RATE_LIMIT_WINDOW_SECONDS },
    keys,
    metrics.rateLimited,
  )
  installIdempotency(app, { db, database, clock: realClock, scheduler })
  const readCache = createReadCache({
    maxBytes: config.READ_CACHE_MAX_BYTES,
    database,
    observe: metrics.readCacheAnswer,
    // The write stands: others hear of it from the record its commit left.
    failedToAnnounce: (err) => app.log.warn({ err }, 'could not announce a change to cached reads'),
  })
  await readCache.listen()
  installCacheForgetting(app, readCache)

  const catalogueRepo = createCatalogueRepository(db)
  const catalogue = createCatalogueService({ repo: catalogueRepo, currency: config.CURRENCY_CODE })
  const hostedRepo = createHostedRepository(db)
  const hostedPages = createHostedPageStore(hostedRepo)
  const configured = chargebeeFromConfig(config)
  const chargebee = configured && observedProvider(configured, metrics.observeProvider)
  const providers = createProviderRegistry([
    observedProvider(createLocalProvider({ hostedPages }), metrics.observeProvider),
    ...(chargebee ? [chargebee] : []),
  ])
  const invoices = createInvoicesService({
    db,
    repo: createInvoicesRepository(),
    scheduler,
    retryDays: dunningRetryDays(config.DUNNING_RETRY_DAYS),
  })
  const analyticsRepo = createAnalyticsRepository()
  const analyticsWriter = createAnalyticsWriter({ repo: analyticsRepo })
  const analytics = createAnalyticsService({ db, repo: analyticsRepo, currency: config.CURRENCY_CODE })
  const subscriptions = createSubscriptionsService({
    db,
    listener: { subscriptionChanged: (trx, companyId, at) => analyticsWriter.record(trx, companyId, at) },
    repo: createSubscriptionsRepository(),
    scheduler,
    clock,
    trialDays: config.TRIAL_DAYS,
    vatRates: config.VAT_RATES,
    sellerCountry: config.SELLER_COUNTRY,
    providers,
    ledger: invoices,
  })
  const ledgerRepo = createProviderLedgerRepository()
  const providerLedger = createProviderLedger({ repo: ledgerRepo })
  const webhooksRepo = createChargebeeWebhooksRepository()
  const webhooks = createChargebeeWebhooksService({
    db,
    repo: webhooksRepo,
    subscriptions,
    clock,
    chargebee,
    ledger: providerLedger,
  })
  subscriptions.registerJobs(scheduler)
  const reconciliation =
    configured && config.CHARGEBEE_RECONCILE_INTERVAL_SECONDS > 0
      ? createChargebeeReconciliation({
          scheduler,
          clock: realClock,
          intervalSeconds: config.CHARGEBEE_RECONCILE_INTERVAL_SECONDS,
          reader: createChargebeeReconcileReader({
            site: config.CHARGEBEE_SITE!,
            apiKey: config.CHARGEBEE_API_KEY!,
            protocol: config.CHARGEBEE_PROTOCOL,
            hostSuffix: config.CHARGEBEE_HOST_SUFFIX,
            port: config.CHARGEBEE_PORT,
            timeoutMs: config.CHARGEBEE_TIMEOUT_MS,
          }),
          subscriptions,
          webhooksRepo,
          ledger: providerLedger,
          log: app.log,
          onDrift: metrics.reconciliationDrift,
        })
      : undefined
  const companies = createCompaniesService({
    db,
    repo: createCompaniesRepository(db),
    catalogue,
    subscriptions,
    access,
    clock,
  })
  const seller = {
    name: config.SELLER_NAME,
    address: config.SELLER_ADDRESS,
    country: config.SELLER_COUNTRY,
    vatNumber: config.SELLER_VAT_NUMBER,
  }
  const documents = createInvoiceDocumentsService({ invoices, companies, seller })
  const fatturapa = createFatturapaService({
    invoices,
    companies,
    repo: createFatturapaRepository(db),
    ...fatturapaSeller(config),
  })
  const hosted = createHostedService({
    repo: hostedRepo,
    subscriptions,
    catalogue,
    invoices,
    companies,
    documents,
    clock,
  })
  const communicationsRepo = createCommunicationsRepository(db)
  const delivery = createCommunicationDelivery({ repo: communicationsRepo, scheduler })
  scheduler.register(DELIVERY_JOB, delivery.deliverOccurrence)
  const communications = {
    communications: createCommunicationsService({ db, repo: communicationsRepo, delivery, clock }),
    messages: createMessagesService({ repo: createMessagesRepository(db), communications: communicationsRepo, clock }),
    attachments: createAttachmentsService({ repo: createAttachmentsRepository(db), clock }),
    delivery,
  }
  const teams = createTeamsService({ repo: createTeamsRepository(db, { observer: metrics.writeBatches }), clock })
  const holidays = createHolidaysService({
    repo: createHolidaysRepository(db),
    publicHolidays: createPublicHolidayCalendar(),
    clock,
  })
  // Kept only while both the clients' and the companies' changes are heard.
  const tokenClients = createTokenClients(oauthRepo, { listening: () => access.listening() && readCache.listening() })
  access.onForget(tokenClients.forgetClient)
  readCache.onForget((companyId, areas) => {
    if (changeShowsIn('token_client', areas)) tokenClients.forgetCompany(companyId)
  })
  const secrets = createSecretChecker()
  // A remembered secret is tied to its stored hash, so only the client's own change needs forgetting;
  // otherwise every platform secret would cost a scrypt again.
  access.onForget((clientId) => {
    if (clientId) secrets.forget(clientId)
  })
  const { events, eventPruning, webhookDelivery, webhookEndpoints } = createEventServices({
    db,
    config,
    realClock,
    scheduler,
    log: app.log,
    registry: metrics.registry,
    objects: {
      company: companies.companyEventObject,
      subsidiary: companies.subsidiaryEventObject,
      contract: companies.contractEventObject,
      team: teams.teamEventObject,
      'team.member_added': memberObject,
      'team.member_updated': memberObject,
      'team.member_removed': memberObject,
      holiday: holidays.holidayEventObject,
      communication: communications.communications.communicationEventObject,
      'communication.occurrence_delivered': communications.communications.occurrenceEventObject,
      message: communications.messages.messageEventObject,
      subscription: subscriptions.subscriptionEventObject,
      invoice: invoices.invoiceEventObject,
      credit_note: invoices.creditNoteEventObject,
    },
  })
  async function memberObject(stored: StoredObject, event: StoredEvent) {
    return teams.memberEventObject(stored, event, await companies.memberContract(stored))
  }
  const oauth = createOauthService({
    repo: oauthRepo,
    clients: tokenClients,
    secrets,
    guesses: createSecretGuesses({ repo: oauthRepo, clock: realClock }),
    keys,
    access,
    clock: realClock,
    companyScopes: (id) => companies.scopeStrings(id),
  })

  await app.register(operationsRoutes, {
    db,
    readiness,
    probeTimeoutMs: Math.min(2_000, config.DATABASE_STATEMENT_TIMEOUT_MS),
  })
  await app.register(tokenRoutes, { service: oauth, keys, bodyLimit: config.BODY_LIMIT_BYTES })
  await app.register(clientRoutes, { service: oauth })
  await app.register(catalogueRoutes, { service: catalogue })
  await app.register(companiesRoutes, { service: companies, cache: readCache })
  await app.register(communicationsRoutes, { ...communications, attachmentMaxBytes: config.ATTACHMENT_MAX_BYTES })
  await app.register(subscriptionsRoutes, { service: subscriptions })
  await app.register(invoicesRoutes, {
    service: invoices,
    subscriptionOf: (companyId: string) => subscriptions.status(companyId),
  })
  const chargebeeMoney = configured && createChargebeeMoneyPort({ money: configured.money, ledger: providerLedger })
  const onChargebee = chargebeeMoney ? { chargebee: chargebeeMoney } : {}
  const invoiceOperations = createInvoiceOperationsService({
    db,
    ledger: invoices,
    subscriptions,
    clock,
    ...onChargebee,
  })
  await app.register(invoiceOperationsRoutes, { service: invoiceOperations })
  await app.register(customerCreditsRoutes, {
    service: createCustomerCreditsService({ subscriptions, ...onChargebee }),
  })
  const charges = createChargesService({ db, subscriptions, invoices, clock, ...onChargebee })
  await app.register(chargesRoutes, { service: charges })
  await app.register(invoiceDocumentsRoutes, { service: documents })
  await app.register(analyticsRoutes, { service: analytics })
  await app.register(fatturapaRoutes, { service: fatturapa })
  // Never the request's Host.
  const hostedBaseUrl = () =>
    config.PUBLIC_BASE_URL ??
    listeningOrigin(config.HOST, config.PORT, app.server.listening ? app.server.address() : null)
  await app.register(hostedApiRoutes, {
    subscriptions,
    hosted,
    allowedHosts: parseAllowedHosts(config.REDIRECT_ALLOWED_HOSTS),
    ttlSeconds: config.HOSTED_PAGE_TTL_SECONDS,
    baseUrl: hostedBaseUrl,
  })
  await app.register(hostedRoutes, {
    service: hosted,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    seller,
  })
  await app.register(chargebeeWebhooksRoutes, {
    service: webhooks,
    credentials: { user: config.CHARGEBEE_WEBHOOK_USER, password: config.CHARGEBEE_WEBHOOK_PASSWORD },
  })
  await app.register(teamsRoutes, { service: teams, cache: readCache })
  await app.register(holidaysRoutes, { service: holidays, cache: readCache })
  // Elsewhere the routes do not exist (404).
  if (config.TEST_CLOCK_ENABLED)
    await app.register(testClockRoutes, { service: createTestClockService({ repo: testClockRepo, clock, scheduler }) })
  await app.register(eventsRoutes, { service: events })
  await app.register(webhookEndpointsRoutes, { service: webhookEndpoints })
  // A write's jobs and event fan-out are committed by its own transaction: a pass now runs them
  // without waiting for the next poll. Whatever the status: a keyed 5xx keeps what it committed.
  app.addHook('onResponse', async (request, reply) => {
    if (request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'OPTIONS') {
      scheduler.wakeAfterRequest(performance.now() - reply.elapsedTime)
      webhookDelivery.afterWrite()
    }
  })
  installDocs(app)
  installConsole(app)

  app.addHook('onReady', async () => {
    await eventPruning.start(db)
    await reconciliation?.start(db)
    if (config.SCHEDULER_ENABLED) {
      scheduler.start()
      webhookDelivery.start()
      // Not on PGlite: its memory, once grown, is never given back, and ANALYZE's samples grow it.
      if (database.engine !== 'pglite') tableStatistics.start()
    }
  })
  app.addHook('preClose', async () => {
    await scheduler.stop()
    await tableStatistics.stop()
    // No more claims; calls under way end within WEBHOOK_TIMEOUT_MS and their outcomes are recorded first.
    await webhookDelivery.stop()
    await webhookDelivery.settled()
    await webhookDelivery.close()
  })
  app.addHook('onClose', async () => {
    readCache.stop()
    clock.stop()
    if (ownsDatabase) await database.close()
  })

  return Object.assign(app, {
    services: {
      communications,
      oauth,
      catalogue,
      companies,
      subscriptions,
      scheduler,
      reconciliation,
      keys,
      readCache,
      clock,
      events,
      eventPruning,
      webhookDelivery,
      tableStatistics,
    },
    database,
    readiness,
    compileSchemas: compilers.compileAll,
  })
}

export type BuiltApp = Awaited<ReturnType<typeof buildApp>>
