import { randomUUID } from 'node:crypto'
import type { Clock } from '../../clock.ts'
import type { PlanRow, ProductRow } from '../../db/tables.ts'
import type { Executor, Scheduler } from '../../jobs/scheduler.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'

export const TRIAL_END_JOB = 'subscription.trial_end'

/** Company subscriptions. Issue 4 grows this into the billing engine behind a provider port. */
export function createSubscriptionsService(deps: { repo: SubscriptionsRepository; scheduler: Pick<Scheduler, 'schedule'>; clock: Clock; trialDays: number }) {
  const { repo, clock } = deps

  return {
    /** A new company's subscription: in trial on the product and plan, the trial's end scheduled. */
    async startTrial(trx: Executor, input: { companyId: string; product: ProductRow; plan: PlanRow; quantity: number; actor: string }) {
      const now = clock.now()
      const trialEnd = new Date(now.getTime() + deps.trialDays * 86_400_000)
      const subscription = await repo.insert(trx, {
        company_id: input.companyId,
        id: randomUUID(),
        customer_id: input.companyId,
        provider: input.product.subscription_manager,
        product_sku: input.product.sku,
        plan_sku: input.plan.sku,
        plan_quantity: input.quantity,
        status: 'in_trial',
        trial_start: now,
        trial_end: trialEnd,
        current_term_start: now,
        current_term_end: trialEnd,
        updated_at: now,
      })
      await repo.insertEvent(trx, {
        company_id: input.companyId, subscription_id: subscription.id, event_type: 'created',
        from_status: null, to_status: 'in_trial', actor: input.actor, occurred_at: now,
        details: JSON.stringify({ product_sku: input.product.sku, plan_sku: input.plan.sku, plan_quantity: input.quantity, trial_end: trialEnd.toISOString() }),
      })
      await deps.scheduler.schedule(trx, { kind: TRIAL_END_JOB, key: subscription.id, runAt: trialEnd, payload: { company_id: input.companyId } })
      return subscription
    },
  }
}

export type SubscriptionsService = ReturnType<typeof createSubscriptionsService>
