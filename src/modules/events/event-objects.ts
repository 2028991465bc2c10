/**
 * An event's `data.object` is the resource as its own GET answers it (same fields and units).
 * The triggers store the row they saw (migration 0019): the change and its record commit
 * together, whoever writes. Each resource's module turns that row into its API shape with the
 * serializer its GET uses, when the event is read or sent; what a GET reads from another table
 * (a company's subscription, a contract's teams) is read then too.
 */
import type { Event } from './events.schemas.ts'

/** The row an event stored, as JSON: timestamps as ISO strings, days as `YYYY-MM-DD`. */
export type StoredObject = Record<string, any>

/** The resource as its GET answers it, from the row its event stored. */
export type ObjectPresenter = (stored: StoredObject, event: StoredEvent) => unknown

/**
 * The presenters by event type or by resource (`team.member_added`, then `team`). A type without
 * one (`ping`) keeps its object as stored.
 */
export type ObjectPresenters = Readonly<Partial<Record<string, ObjectPresenter>>>

/** A stored timestamp as the Date a repository would answer. */
export const storedTime = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(value as string))

/**
 * A read of many resources' related rows in one statement: the calls made in the same turn of
 * the event loop (a delivery pass presents its events together) share one `loadMany`.
 */
export function batchedByResource<V>(loadMany: (keys: ReadonlyArray<{ companyId: string; id: string }>) => Promise<Map<string, V>>, missing: V) {
  let pending: Array<{ companyId: string; id: string; resolve: (value: V) => void; reject: (err: unknown) => void }> = []
  return (companyId: string, id: string): Promise<V> => new Promise<V>((resolve, reject) => {
    if (pending.length === 0) {
      setImmediate(() => {
        const batch = pending
        pending = []
        loadMany(batch).then((found) => { for (const p of batch) p.resolve(found.get(`${p.companyId}/${p.id}`) ?? missing) }, (err) => { for (const p of batch) p.reject(err) })
      })
    }
    pending.push({ companyId, id, resolve, reject })
  })
}

export interface StoredEvent { id: string; type: string; company_id: string | null; data: unknown; created_at: Date | string }

/** Turns stored events into events as clients read them, in the log and in webhooks. */
export function createEventPresenter(presenters: ObjectPresenters) {
  const presenterOf = (type: string) => presenters[type] ?? presenters[type.split('.')[0]!]

  /** The stored previous_attributes as fields of the API shape: those of the object before the change that differ from after it. */
  async function presentedChanges(present: ObjectPresenter, event: StoredEvent, stored: StoredObject, after: unknown, previous: Record<string, unknown>) {
    const before = await present({ ...stored, ...previous }, event) as Record<string, unknown>
    const now = after as Record<string, unknown>
    const moved: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(before)) if (JSON.stringify(value) !== JSON.stringify(now[key])) moved[key] = value
    return moved
  }

  return {
    async event(row: StoredEvent): Promise<Event> {
      const data = row.data as { object: StoredObject; previous_attributes?: Record<string, unknown> }
      const present = presenterOf(row.type)
      const object = present ? await present(data.object, row) : data.object
      const previous = present && data.previous_attributes ? await presentedChanges(present, row, data.object, object, data.previous_attributes) : data.previous_attributes
      return {
        id: row.id, type: row.type as Event['type'], created_at: new Date(row.created_at).toISOString(), company_id: row.company_id,
        data: { object, ...(previous ? { previous_attributes: previous } : {}) },
      }
    },
  }
}

export type EventPresenter = ReturnType<typeof createEventPresenter>
