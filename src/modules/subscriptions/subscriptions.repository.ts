import type { Insertable, Updateable } from 'kysely'
import type { Executor } from '../../jobs/scheduler.ts'
import type { SubscriptionEventsTable, SubscriptionsTable } from '../../db/tables.ts'

// Subscriptions, their event history and the catalogue reads billing needs. Every function takes
// the executor, so a change reads and writes in one transaction (on PGlite a read outside it would wait).
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function createSubscriptionsRepository() {
  return {
    insert: (executor: Executor, subscription: Insertable<SubscriptionsTable>) =>
      executor.insertInto('subscriptions').values(subscription).returningAll().executeTakeFirstOrThrow(),
    findByCompany: (executor: Executor, companyId: string) =>
      executor.selectFrom('subscriptions').selectAll().where('company_id', '=', companyId).executeTakeFirst(),
    /** Keyed `<company_id>/<subscription_id>`; a subscription no longer there absent. */
    async updatedAtsOf(executor: Executor, keys: ReadonlyArray<{ companyId: string; id: string }>) {
      const rows = await executor
        .selectFrom('subscriptions')
        .select(['company_id', 'id', 'updated_at'])
        .where((eb) =>
          eb(
            eb.refTuple('company_id', 'id'),
            'in',
            keys.map((s) => eb.tuple(s.companyId, s.id)),
          ),
        )
        .execute()
      return new Map(rows.map((row) => [`${row.company_id}/${row.id}`, row.updated_at]))
    },
    /** Locked until the transaction ends: changes to one subscription run one at a time. */
    lockByCompany: (executor: Executor, companyId: string) =>
      executor
        .selectFrom('subscriptions')
        .selectAll()
        .where('company_id', '=', companyId)
        .forUpdate()
        .executeTakeFirst(),
    /** By the company's id or the subscription's own; the caller checks the company against the token. */
    findByCompanyOrId: (executor: Executor, ref: string) =>
      executor
        .selectFrom('subscriptions')
        .select(['company_id', 'id'])
        .where((eb) => eb.or([eb('company_id', '=', ref), eb('id', '=', ref)]))
        .executeTakeFirst(),
    /** By its id or its customer id, with its provider. */
    findByReference: (executor: Executor, ref: { id?: string; customerId?: string }) => {
      let query = executor.selectFrom('subscriptions').select(['company_id', 'id', 'provider'])
      if (ref.id !== undefined) query = query.where('id', '=', ref.id)
      if (ref.customerId !== undefined) query = query.where('customer_id', '=', ref.customerId)
      return query.executeTakeFirst()
    },
    /** A provider's subscriptions, ordered by company (the reconciliation's lanes). */
    listHeldBy: (executor: Executor, provider: 'local' | 'chargebee') =>
      executor
        .selectFrom('subscriptions')
        .select(['company_id', 'id'])
        .where('provider', '=', provider)
        .orderBy('company_id')
        .execute(),
    async update(executor: Executor, companyId: string, id: string, values: Updateable<SubscriptionsTable>) {
      await executor
        .updateTable('subscriptions')
        .set(values)
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .execute()
    },
    insertEvent: (executor: Executor, event: Insertable<SubscriptionEventsTable>) =>
      executor.insertInto('subscription_events').values(event).execute(),

    findCustomer: (executor: Executor, companyId: string) =>
      executor
        .selectFrom('companies')
        .select(['id', 'name', 'billing_email', 'country', 'vat_number', 'vat_number_status', 'timezone'])
        .where('id', '=', companyId)
        .executeTakeFirst(),

    findPlan: (executor: Executor, sku: string) =>
      executor.selectFrom('plans').selectAll().where('sku', '=', sku).executeTakeFirst(),
    findProduct: (executor: Executor, sku: string) =>
      executor.selectFrom('products').selectAll().where('sku', '=', sku).executeTakeFirst(),
    // A provider's own item price ids are not UUIDs: no match, never a malformed query.
    findAddons: (executor: Executor, ids: string[]) => {
      const ours = ids.filter((id) => UUID.test(id))
      return ours.length === 0
        ? Promise.resolve([])
        : executor.selectFrom('addons').selectAll().where('id', 'in', ours).execute()
    },
    findCoupon: (executor: Executor, code: string) =>
      executor.selectFrom('coupons').selectAll().where('code', '=', code).executeTakeFirst(),

    async hasRedeemed(executor: Executor, couponId: string, companyId: string): Promise<boolean> {
      const row = await executor
        .selectFrom('coupon_redemptions')
        .select('coupon_id')
        .where('coupon_id', '=', couponId)
        .where('company_id', '=', companyId)
        .executeTakeFirst()
      return row !== undefined
    },

    /**
     * Redeems the coupon for the company once (a second redemption is a no-op answering true). A first
     * one is counted in the statement that checks limit and date and locks the coupon row, so of two
     * concurrent last redemptions the second gets false. False: expired or used up.
     */
    async redeemCoupon(executor: Executor, couponId: string, companyId: string, today: string): Promise<boolean> {
      const claimed = await executor
        .insertInto('coupon_redemptions')
        .values({ coupon_id: couponId, company_id: companyId })
        .onConflict((oc) => oc.columns(['coupon_id', 'company_id']).doNothing())
        .returning('coupon_id')
        .executeTakeFirst()
      if (!claimed) return true
      const row = await executor
        .updateTable('coupons')
        .set((eb) => ({ redemptions: eb('redemptions', '+', 1) }))
        .where('id', '=', couponId)
        .where((eb) => eb.or([eb('max_redemptions', 'is', null), eb('redemptions', '<', eb.ref('max_redemptions'))]))
        .where((eb) => eb.or([eb('valid_till', 'is', null), eb('valid_till', '>=', today)]))
        .returning('id')
        .executeTakeFirst()
      return row !== undefined
    },

    async redemptionUsage(executor: Executor, couponId: string, companyId: string) {
      const row = await executor
        .selectFrom('coupon_redemptions')
        .select('usage')
        .where('coupon_id', '=', couponId)
        .where('company_id', '=', companyId)
        .executeTakeFirst()
      return row?.usage ?? null
    },

    async keepRedemptionUsage(executor: Executor, couponCode: string, companyId: string, usage: string) {
      await executor
        .updateTable('coupon_redemptions')
        .set({ usage })
        .where('company_id', '=', companyId)
        .where('coupon_id', 'in', (eb) => eb.selectFrom('coupons').select('id').where('code', '=', couponCode))
        .execute()
    },

    listEvents: (executor: Executor, companyId: string, subscriptionId: string) =>
      executor
        .selectFrom('subscription_events')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('subscription_id', '=', subscriptionId)
        .orderBy('id')
        .execute(),
  }
}

export type SubscriptionsRepository = ReturnType<typeof createSubscriptionsRepository>
