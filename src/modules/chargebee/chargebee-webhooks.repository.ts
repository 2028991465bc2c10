import { sql } from 'kysely'
import type { WebhookOutcome } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'

/** Provider webhooks: events received (idempotency) and the newest state applied (ordering). */
export function createChargebeeWebhooksRepository() {
  return {
    /** False when recorded before; a concurrent delivery of the same id waits on the primary key, then gets false. */
    async recordEvent(
      executor: Executor,
      event: { provider: 'chargebee'; event_id: string; event_type: string; occurred_at: Date; received_at: Date },
    ): Promise<boolean> {
      const row = await executor
        .insertInto('webhook_events')
        .values({ ...event, outcome: 'ignored', subscription_id: null })
        .onConflict((oc) => oc.columns(['provider', 'event_id']).doNothing())
        .returning('event_id')
        .executeTakeFirst()
      return row !== undefined
    },

    async setOutcome(
      executor: Executor,
      provider: 'chargebee',
      eventId: string,
      outcome: WebhookOutcome,
      subscriptionId: string | null,
    ) {
      await executor
        .updateTable('webhook_events')
        .set({ outcome, subscription_id: subscriptionId })
        .where('provider', '=', provider)
        .where('event_id', '=', eventId)
        .execute()
    },

    findEvent: (executor: Executor, provider: 'chargebee', eventId: string) =>
      executor
        .selectFrom('webhook_events')
        .selectAll()
        .where('provider', '=', provider)
        .where('event_id', '=', eventId)
        .executeTakeFirst(),

    /** False when `version` is not newer than the state applied: the event is stale. */
    async advanceVersion(
      executor: Executor,
      subscriptionId: string,
      version: bigint,
      occurredAt: Date,
    ): Promise<boolean> {
      const row = await executor
        .insertInto('provider_subscription_versions')
        .values({ subscription_id: subscriptionId, resource_version: version.toString(), occurred_at: occurredAt })
        .onConflict((oc) =>
          oc
            .column('subscription_id')
            .doUpdateSet({
              resource_version: (eb) => eb.ref('excluded.resource_version'),
              occurred_at: (eb) => eb.ref('excluded.occurred_at'),
            })
            .where(sql<boolean>`provider_subscription_versions.resource_version < excluded.resource_version`),
        )
        .returning('subscription_id')
        .executeTakeFirst()
      return row !== undefined
    },

    async appliedVersion(executor: Executor, subscriptionId: string): Promise<bigint | undefined> {
      const row = await executor
        .selectFrom('provider_subscription_versions')
        .select('resource_version')
        .where('subscription_id', '=', subscriptionId)
        .executeTakeFirst()
      return row ? BigInt(row.resource_version) : undefined
    },
  }
}

export type ChargebeeWebhooksRepository = ReturnType<typeof createChargebeeWebhooksRepository>
