import { batchedByResource, storedTime, type StoredObject } from '../events/event-objects.ts'
import { uuidFromName } from '../../core/ids.ts'
import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import type { DB, PlanRow, ProductRow, SubscriptionRow } from '../../db/tables.ts'
import type { Executor, Scheduler } from '../../jobs/scheduler.ts'
import {
  type InvoiceEstimate,
  freshUsage,
  usageColumns,
  vatTable,
  type BillingProvider,
  type HostedPageOptions,
  type ProviderRegistry,
} from '../billing/index.ts'
import { createPricing } from './subscriptions.pricing.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import { nextBillingAt, statusView, subscriptionView } from './subscriptions.views.ts'
import { createRemoteChanges } from './subscriptions.remote-changes.ts'
import { createSubscriptionSteps } from './subscriptions.steps.ts'
import { createSubscriptionJobs } from './subscriptions.jobs.ts'
import { TRIAL_END_JOB } from './subscriptions.job-kinds.ts'
import { createSubscriptionEstimates } from './subscriptions.estimates.ts'
import { createSubscriptionChanges } from './subscriptions.changes.ts'
import { createProviderCopies } from './subscriptions.provider-copies.ts'
import { createSubscriptionMoney } from './subscriptions.money.ts'
import type { SubscriptionChangeListener } from './subscriptions.history.ts'
import { createSubscriptionPauses } from './subscriptions.pauses.ts'
import type { Ledger } from '../invoices/index.ts'

/**
 * Company subscriptions over a billing provider port: requests are checked against catalogue and
 * lifecycle, the provider gives the next state, saved with its event in one transaction. Creation
 * and reads here; changes, jobs and estimates in subscriptions.*.ts.
 */
export function createSubscriptionsService(deps: {
  db: Kysely<DB>
  repo: SubscriptionsRepository
  scheduler: Pick<Scheduler, 'schedule'>
  clock: Clock
  trialDays: number
  providers: ProviderRegistry
  vatRates?: string
  /** Where the seller is established, for reverse charge. */
  sellerCountry?: string
  ledger: Ledger
  /** Told of each change in its transaction (the revenue analytics). */
  listener?: SubscriptionChangeListener
}) {
  const { db, repo, clock, providers, ledger, listener } = deps
  const updatedAtOf = batchedByResource((keys) => repo.updatedAtsOf(db, keys), undefined)
  const pricing = createPricing({
    repo,
    vatRates: vatTable(deps.vatRates ?? ''),
    sellerCountry: deps.sellerCountry ?? 'IT',
  })
  const steps = createSubscriptionSteps({ db, repo, scheduler: deps.scheduler, clock, providers, ledger, listener })
  const { customerOf, details, findOwn } = steps
  const remote = createRemoteChanges({ repo, change: steps.change })
  const jobs = createSubscriptionJobs({ repo, scheduler: deps.scheduler, providers, pricing, ledger, steps })
  const estimates = createSubscriptionEstimates({
    db,
    repo,
    clock,
    providers,
    pricing,
    ledger,
    trialDays: deps.trialDays,
    steps,
    known: remote.known,
  })
  const changes = createSubscriptionChanges({
    db,
    repo,
    clock,
    ledger,
    steps,
    remote,
    priceChange: estimates.priceChange,
    bill: jobs.bill,
  })

  return {
    async startTrial(
      trx: Executor,
      input: { companyId: string; product: ProductRow; plan: PlanRow; quantity: number; actor: string },
    ) {
      const now = clock.now()
      const trialEnd = new Date(now.getTime() + deps.trialDays * 86_400_000)
      const provider = providers.get(input.product.subscription_manager)
      const draft: SubscriptionRow = {
        // Named by its company: a retried creation finds the same subscription.
        company_id: input.companyId,
        id: uuidFromName(`subscription:${input.companyId}`),
        customer_id: input.companyId,
        provider: provider.name,
        product_sku: input.product.sku,
        plan_sku: input.plan.sku,
        plan_quantity: input.quantity,
        addons: [],
        coupon_code: null,
        status: 'in_trial',
        trial_start: now,
        trial_end: trialEnd,
        current_term_start: now,
        current_term_end: trialEnd,
        cancelled_at: null,
        cancel_scheduled_at: null,
        payment_source: null,
        billing_anchor_day: null,
        cancellation_reason: null,
        cancellation_message: null,
        scheduled_change: null,
        pause_date: null,
        resume_date: null,
        ...usageColumns(freshUsage(null)),
        created_at: now,
        updated_at: now,
      }
      const created = await provider.createSubscription({
        subscription: draft,
        customer: await customerOf(trx, input.companyId),
      })
      const subscription = await repo.insert(trx, {
        ...created,
        addons: JSON.stringify(created.addons),
        payment_source: JSON.stringify(created.payment_source),
        coupon_period_discounts: JSON.stringify(created.coupon_period_discounts),
        scheduled_change: created.scheduled_change ? JSON.stringify(created.scheduled_change) : null,
      })
      await repo.insertEvent(trx, {
        company_id: input.companyId,
        subscription_id: subscription.id,
        event_type: 'created',
        from_status: null,
        to_status: subscription.status,
        actor: input.actor,
        occurred_at: now,
        details: JSON.stringify({
          product_sku: input.product.sku,
          plan_sku: input.plan.sku,
          plan_quantity: input.quantity,
          trial_end: trialEnd.toISOString(),
        }),
      })
      await listener?.subscriptionChanged(trx, input.companyId, now)
      if (provider.drivesTime) {
        await deps.scheduler.schedule(trx, {
          kind: TRIAL_END_JOB,
          key: subscription.id,
          runAt: trialEnd,
          companyId: input.companyId,
          payload: { company_id: input.companyId },
        })
      }
      return subscription
    },

    /**
     * Deletes at a remote provider what a failed company creation left; if that fails too, the
     * creation's own error is still the answer and the orphan stays there.
     */
    async abandonTrial(companyId: string, product: ProductRow) {
      try {
        await providers.get(product.subscription_manager).abandonCustomer?.(companyId)
      } catch {}
    },

    registerJobs: jobs.registerJobs,

    async details(companyId: string) {
      return details(db, await findOwn(companyId))
    },

    /**
     * A subscription event's object, as GET .../details answers it. updated_at is the change's; an event
     * stored without it reads it now while the subscription is there, else takes the event's time.
     */
    async subscriptionEventObject(stored: StoredObject, event: { created_at?: Date | string }) {
      const t = (key: string) => storedTime(stored[key])
      const updatedAt =
        t('updated_at') ??
        (await updatedAtOf(stored.company_id, stored.id)) ??
        new Date(event.created_at ?? stored.created_at)
      return subscriptionView({
        ...(stored as SubscriptionRow),
        trial_start: t('trial_start'),
        trial_end: t('trial_end'),
        current_term_start: t('current_term_start'),
        current_term_end: t('current_term_end'),
        cancelled_at: t('cancelled_at'),
        cancel_scheduled_at: t('cancel_scheduled_at'),
        coupon_applied_at: t('coupon_applied_at'),
        coupon_apply_till: t('coupon_apply_till'),
        pause_date: t('pause_date'),
        resume_date: t('resume_date'),
        scheduled_change: (stored.scheduled_change as SubscriptionRow['scheduled_change']) ?? null,
        created_at: t('created_at')!,
        updated_at: updatedAt,
      })
    },

    /**
     * Who bills the company's subscription, and what a money operation on it needs: the
     * subscription's id, status, plan currency and whether it renews; 404 without one.
     */
    async billedBy(companyId: string) {
      const s = await findOwn(companyId)
      const plan = await repo.findPlan(db, s.plan_sku)
      return {
        provider: s.provider,
        subscriptionId: s.id,
        status: s.status,
        renews: nextBillingAt(s) !== null,
        cancelScheduled: s.cancel_scheduled_at !== null,
        currencyCode: plan?.currency_code ?? null,
      }
    },

    async status(companyId: string) {
      const s = await findOwn(companyId)
      return statusView(s, await repo.findPlan(db, s.plan_sku))
    },

    ...changes,

    ...createSubscriptionPauses({ clock, steps, remote, jobs }),

    ...createProviderCopies({ repo, listener }),

    ...createSubscriptionMoney({ clock, pricing, ledger, steps, bill: jobs.bill }),

    estimateFor: estimates.estimateFor,
    estimate: estimates.estimate,

    /** A hosted page from the provider; the caller has checked the redirect URL and the company. */
    async hostedPage<K extends 'managerPage' | 'portalSession' | 'paymentPage'>(
      kind: K,
      companyId: string,
      options: Omit<HostedPageOptions, 'now'>,
    ): Promise<Awaited<ReturnType<BillingProvider[K]>>> {
      const s = await findOwn(companyId)
      const { timezone: _, ...customer } = await customerOf(db, companyId)
      const provider = providers.get(s.provider)
      return provider[kind]({ subscription: s, customer }, { ...options, now: clock.now() }) as Promise<
        Awaited<ReturnType<BillingProvider[K]>>
      >
    },

    /** The details and the next charge (null when nothing will be charged), from one read. */
    async detailsWithNextCharge(companyId: string): Promise<{
      details: Awaited<ReturnType<typeof details>>
      next: { at: number; invoice: InvoiceEstimate } | null
    }> {
      const s = await findOwn(companyId)
      const customer = await customerOf(db, companyId)
      const [view, next] = await Promise.all([details(db, s, customer), estimates.nextCharge(db, s, customer)])
      return { details: view, next }
    },

    async events(companyId: string) {
      const s = await findOwn(companyId)
      return repo.listEvents(db, companyId, s.id)
    },
  }
}

export type SubscriptionsService = ReturnType<typeof createSubscriptionsService>
