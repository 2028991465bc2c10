import type { SubscriptionRow } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { ProviderName } from '../billing/index.ts'
import { recordChange, type SubscriptionChangeListener } from './subscriptions.history.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'

type Repo = Pick<
  SubscriptionsRepository,
  'lockByCompany' | 'findByReference' | 'listHeldBy' | 'findPlan' | 'update' | 'insertEvent'
>

/**
 * What a remote provider's integration needs to lay its copy of a subscription over ours (its
 * webhooks, its reconciliation): each call runs in the integration's own transaction.
 */
export function createProviderCopies(deps: { repo: Repo; listener?: SubscriptionChangeListener }) {
  const { repo } = deps
  return {
    /** The company's subscription, locked until the transaction ends. */
    lockForProvider: (trx: Executor, companyId: string) => repo.lockByCompany(trx, companyId),
    /** By its id, or by its customer id (the provider's events name either); with its provider. */
    findForProvider: (trx: Executor, ref: { id: string } | { customerId: string }) => repo.findByReference(trx, ref),
    /** Every subscription the provider holds (id and company). */
    heldByProvider: (trx: Executor, provider: ProviderName) => repo.listHeldBy(trx, provider),
    async planExists(trx: Executor, sku: string): Promise<boolean> {
      return (await repo.findPlan(trx, sku)) !== undefined
    },
    /** Saves the state the provider reports, with its event; false when nothing moved. */
    recordProviderChange: (
      trx: Executor,
      before: SubscriptionRow,
      after: SubscriptionRow,
      what: { event: string; actor: string; at: Date; now: Date; details?: Record<string, unknown> },
    ) => recordChange(trx, repo, before, after, what, deps.listener),
  }
}
