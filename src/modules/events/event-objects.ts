// An event's `data.object` is the resource as its own GET answers it: triggers store the row with
// what its GET reads from other tables as it was at the change (migration 0048), and the resource's
// module presents it with its GET's serializer when the event is read or sent.
import type { Event } from './events.schemas.ts'

/** Timestamps as ISO strings, days as `YYYY-MM-DD`. */
export type StoredObject = Record<string, any>

export type ObjectPresenter = (stored: StoredObject, event: StoredEvent) => unknown

/** By event type, then by resource; a type without one (`ping`) keeps its stored object. */
export type ObjectPresenters = Readonly<Partial<Record<string, ObjectPresenter>>>

export const storedTime = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(value as string)

/** Calls in the same turn of the event loop share one `loadMany` (a delivery pass presents its events together). */
export function batchedByResource<V>(
  loadMany: (keys: ReadonlyArray<{ companyId: string; id: string }>) => Promise<Map<string, V>>,
  missing: V,
) {
  let pending: Array<{ companyId: string; id: string; resolve: (value: V) => void; reject: (err: unknown) => void }> =
    []
  return (companyId: string, id: string): Promise<V> =>
    new Promise<V>((resolve, reject) => {
      if (pending.length === 0) {
        setImmediate(() => {
          const batch = pending
          pending = []
          loadMany(batch).then(
            (found) => {
              for (const p of batch) p.resolve(found.get(`${p.companyId}/${p.id}`) ?? missing)
            },
            (err) => {
              for (const p of batch) p.reject(err)
            },
          )
        })
      }
      pending.push({ companyId, id, resolve, reject })
    })
}

export interface StoredEvent {
  id: string
  type: string
  company_id: string | null
  data: unknown
  created_at: Date | string
}

export function createEventPresenter(presenters: ObjectPresenters) {
  const presenterOf = (type: string) => presenters[type] ?? presenters[type.split('.')[0]!]

  /** The fields of the object before the change that differ from after it. */
  async function presentedChanges(
    present: ObjectPresenter,
    event: StoredEvent,
    stored: StoredObject,
    after: unknown,
    previous: Record<string, unknown>,
  ) {
    const before = (await present({ ...stored, ...previous }, event)) as Record<string, unknown>
    const now = after as Record<string, unknown>
    const moved: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(before))
      if (JSON.stringify(value) !== JSON.stringify(now[key])) moved[key] = value
    return moved
  }

  return {
    async event(row: StoredEvent): Promise<Event> {
      const data = row.data as { object: StoredObject; previous_attributes?: Record<string, unknown> }
      const present = presenterOf(row.type)
      const object = present ? await present(data.object, row) : data.object
      const previous =
        present && data.previous_attributes
          ? await presentedChanges(present, row, data.object, object, data.previous_attributes)
          : data.previous_attributes
      return {
        id: row.id,
        type: row.type as Event['type'],
        created_at: new Date(row.created_at).toISOString(),
        company_id: row.company_id,
        data: { object, ...(previous ? { previous_attributes: previous } : {}) },
      }
    },
  }
}

export type EventPresenter = ReturnType<typeof createEventPresenter>
