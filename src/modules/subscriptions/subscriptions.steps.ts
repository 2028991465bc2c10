import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import type { DB, SubscriptionRow } from '../../db/tables.ts'
import { NotFound } from '../../core/errors.ts'
import type { Executor, Scheduler } from '../../jobs/scheduler.ts'
import type { BillingCustomer, BillingProvider, ProviderRegistry, TaxCustomer } from '../billing/index.ts'
import { missingFromCatalogue } from './subscriptions.pricing.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import { detailsView } from './subscriptions.views.ts'
import { recordChange, type SubscriptionChangeListener } from './subscriptions.history.ts'
import { TERM_END_JOB } from './subscriptions.job-kinds.ts'
import type { Ledger } from '../invoices/index.ts'

export type SubscriptionCustomer = BillingCustomer & TaxCustomer & { timezone: string }

// Steps every operation on a subscription shares, whatever its provider, kept apart so each part of
// the service takes only those it uses.
export function createSubscriptionSteps(deps: {
  db: Kysely<DB>
  repo: Pick<
    SubscriptionsRepository,
    'update' | 'insertEvent' | 'lockByCompany' | 'findByCompany' | 'findCustomer' | 'findPlan' | 'findProduct'
  >
  scheduler: Pick<Scheduler, 'schedule'>
  clock: Clock
  providers: ProviderRegistry
  ledger: Pick<Ledger, 'credits'>
  listener?: SubscriptionChangeListener
}) {
  const { db, repo, clock, providers, ledger } = deps

  /** Also schedules the term's end when this service drives time. */
  async function save(
    trx: Executor,
    before: SubscriptionRow,
    after: SubscriptionRow,
    what: { event: string; actor: string; at: Date; details?: Record<string, unknown> },
  ): Promise<boolean> {
    const provider = providers.get(before.provider)
    const saved = await recordChange(trx, repo, before, after, { ...what, now: clock.now() }, deps.listener)
    if (
      saved &&
      provider.drivesTime &&
      (after.status === 'active' || after.status === 'non_renewing') &&
      after.current_term_end
    ) {
      const termEnd = after.current_term_end
      await deps.scheduler.schedule(trx, {
        kind: TERM_END_JOB,
        key: `${after.id}@${termEnd.toISOString()}`,
        runAt: termEnd,
        companyId: after.company_id,
        payload: { company_id: after.company_id, subscription_id: after.id, term_end: termEnd.toISOString() },
      })
    }
    return saved
  }

  function change<T>(
    companyId: string,
    subscriptionId: string | undefined,
    fn: (trx: Executor, s: SubscriptionRow, provider: BillingProvider) => Promise<T>,
  ): Promise<T> {
    return db.transaction().execute(async (trx) => {
      const s = await repo.lockByCompany(trx, companyId)
      if (!s || (subscriptionId !== undefined && s.id !== subscriptionId)) throw new NotFound('Subscription')
      return fn(trx, s, providers.get(s.provider))
    })
  }

  async function customerOf(executor: Executor, companyId: string): Promise<SubscriptionCustomer> {
    const row = await repo.findCustomer(executor, companyId)
    if (!row) throw new NotFound('Company')
    return {
      id: companyId,
      company_id: companyId,
      name: row.name,
      email: row.billing_email,
      country: row.country,
      vat_number: row.vat_number,
      vat_number_status: row.vat_number_status,
      timezone: row.timezone,
    }
  }

  async function details(executor: Executor, s: SubscriptionRow, known?: SubscriptionCustomer) {
    const [plan, product, customer] = await Promise.all([
      repo.findPlan(executor, s.plan_sku),
      repo.findProduct(executor, s.product_sku),
      known ?? customerOf(executor, s.company_id),
    ])
    if (!product) throw missingFromCatalogue(s, 'product', s.product_sku)
    if (!plan) throw missingFromCatalogue(s, 'plan', s.plan_sku)
    // The subscription bills in its plan's currency: credits in another never pay its invoices.
    const credits = await ledger.credits(executor, s.company_id, plan.currency_code)
    const { timezone: _, vat_number: __, vat_number_status: ___, ...billingCustomer } = customer
    return detailsView(s, plan, product, billingCustomer, credits)
  }

  async function findOwn(companyId: string) {
    const s = await repo.findByCompany(db, companyId)
    if (!s) throw new NotFound('Subscription')
    return s
  }

  return { save, change, customerOf, details, findOwn }
}

export type SubscriptionSteps = ReturnType<typeof createSubscriptionSteps>
