import { it, afterEach } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { company, contract } from './helpers/factories.ts'
import { eventually } from './helpers/eventually.ts'
import { companyEndpoints, endpointSteps } from './helpers/webhook-endpoints.ts'
import { RETRY_DELAYS_MS } from '../src/modules/webhook-endpoints/delivery.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Direct calls that succeed are recorded as items of batch rows, not as delivery and attempt rows
 * (migration 0036): the list of attempts merges both, pages through them, and they go with their
 * endpoint and with the events' retention.
 */
onEachEngine(
  'first deliveries recorded in batches',
  { WEBHOOK_ALLOW_PRIVATE_TARGETS: true, WEBHOOK_TIMEOUT_MS: 5_000 },
  (t) => {
    const { receivers, listen, endpoint, deliverAt, deliverNow } = endpointSteps(() => t)
    afterEach(async () => {
      for (const r of receivers.splice(0)) await r.close()
    })

    const db = () => t.app.database.db
    const count = async (query: ReturnType<typeof sql<{ n: number }>>) => (await query.execute(db())).rows[0]!.n

    /** `n` contracts whose first calls are held open, then answered 200 at once: their outcomes share a batch. */
    async function deliveredTogether(companyId: string, r: Awaited<ReturnType<typeof listen>>, n: number) {
      r.set('never')
      for (let i = 0; i < n; i++) await contract(t, companyId)
      const before = r.received.length
      const back = t.realClock.now()
      t.realClock.set(new Date(Date.now() + 1000))
      try {
        await t.app.services.webhookDelivery.runDue()
        await eventually(
          async () => r.received.length,
          (got) => got >= before + n,
          30_000,
        )
        for (let i = 0; i < n; i++) assert.ok(r.answerOldest(200))
        await t.app.services.webhookDelivery.settled()
      } finally {
        t.realClock.set(back)
        r.set('ok')
      }
    }

    /** Every page of the endpoint's attempts at `limit`, following the Link headers. */
    async function walk(url: string, limit: number, options: { fullPages?: boolean } = {}) {
      const items: any[] = []
      let next: string | undefined = `${url}?limit=${limit}`
      while (next) {
        const res = await t.call({ url: next })
        assert.equal(res.statusCode, 200, res.body)
        const page = res.json() as any[]
        assert.ok(page.length <= limit)
        items.push(...page)
        const link = res.headers.link as string | undefined
        next = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined
        if (next && options.fullPages !== false) assert.equal(page.length, limit, 'a page followed by another is full')
      }
      return items
    }

    it('lists first deliveries beside the attempt rows, newest first, and pages them without a gap or a repeat', async () => {
      const c = await company(t)
      const r = await listen('ok')
      const created = await endpoint(c.id, { url: r.url, event_types: ['contract.created'] })
      const url = `${companyEndpoints(c.id)}/${created.id}/deliveries`
      // Three first calls answered at once (one batch row of three), a failed first call and its
      // retry (two attempt rows), then two first calls in passes of their own.
      await deliveredTogether(c.id, r, 3)
      r.set('fail')
      await contract(t, c.id)
      await deliverNow()
      r.set('ok')
      await deliverAt(new Date(Date.now() + RETRY_DELAYS_MS[0]! + 2000))
      await contract(t, c.id)
      await deliverNow()
      await contract(t, c.id)
      await deliverNow()

      const whole = await t.json<any[]>(200, { url, query: { limit: '500' } })
      assert.deepEqual(
        whole.map((a) => [a.attempt, a.status]),
        [
          [1, 'succeeded'],
          [1, 'succeeded'],
          [2, 'succeeded'],
          [1, 'failed'],
          [1, 'succeeded'],
          [1, 'succeeded'],
          [1, 'succeeded'],
        ],
      )
      const events = await t.json<any[]>(200, {
        url: `/api/v1/companies/${c.id}/events`,
        query: { type: 'contract.created' },
      })
      // Newest first: the events' own order (the failed one's two attempts side by side), but
      // within the first batch, whose items are in the order their answers came back.
      assert.deepEqual(
        whole.slice(0, 4).map((a) => a.event_id),
        [events[0].id, events[1].id, events[2].id, events[2].id],
      )
      assert.deepEqual(
        whole
          .slice(4)
          .map((a) => a.event_id)
          .sort(),
        [events[3].id, events[4].id, events[5].id].sort(),
      )
      assert.deepEqual(
        whole.slice(4).map((a) => Number(a.id)),
        whole
          .slice(4)
          .map((a) => Number(a.id))
          .sort((x, y) => y - x),
        "ids grow with a batch item's position",
      )
      assert.equal(new Set(whole.map((a) => a.id)).size, 7, 'every attempt has its own id')
      assert.ok(whole.every((a) => /^\d+$/.test(a.id)))
      assert.equal(
        new Set(whole.map((a) => a.delivery_id)).size,
        6,
        "one delivery per event; the retry shares its first attempt's",
      )
      assert.ok(whole.every((a) => a.event_type === 'contract.created' && Number.isInteger(a.duration_ms)))
      assert.ok(
        whole
          .filter((a) => a.status === 'succeeded')
          .every((a) => a.status_code === 200 && a.error === null && a.next_retry_at === null),
      )
      // What the list is made of: first deliveries as batch items (one of them holding three),
      // the failed event's delivery as the queue's rows.
      assert.equal(
        await count(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ${created.id}`,
        ),
        1,
      )
      assert.equal(
        await count(
          sql<{
            n: number
          }>`SELECT max(cardinality(attempt_ids))::int AS n FROM webhook_delivered_batches WHERE endpoint_id = ${created.id}`,
        ),
        3,
      )

      for (const limit of [1, 2, 3, 6]) {
        assert.deepEqual(
          (await walk(url, limit)).map((a) => a.id),
          whole.map((a) => a.id),
          `pages of ${limit}`,
        )
      }
      // Nothing is owed: no fan-out row left, and nothing is sent again a day later.
      assert.equal(
        await count(
          sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM webhook_fanouts f JOIN events e ON e.id = f.event_id WHERE e.company_id = ${c.id}`,
        ),
        0,
      )
      const sent = r.received.length
      await deliverAt(new Date(Date.now() + 86_400_000))
      assert.equal(r.received.length, sent)
    })

    it('an item whose event is gone is left out without ending the list early', async () => {
      const c = await company(t)
      const r = await listen('ok')
      const created = await endpoint(c.id, { url: r.url, event_types: ['contract.created'] })
      // Five batch rows of one item each.
      for (let i = 0; i < 5; i++) {
        await contract(t, c.id)
        await deliverNow()
      }
      const url = `${companyEndpoints(c.id)}/${created.id}/deliveries`
      const [newest, ...rest] = await t.json<any[]>(200, { url })
      const oldest = rest.pop()
      // As the retention leaves it when it deletes events before the batch rows of their
      // deliveries: more such rows in a row than a page of 1 reads from each side.
      for (const gone of rest) await sql`DELETE FROM events WHERE id = ${gone.event_id}`.execute(db())
      assert.deepEqual(
        (await walk(url, 1, { fullPages: false })).map((a) => a.id),
        [newest.id, oldest.id],
      )
      assert.deepEqual(
        (await t.json<any[]>(200, { url })).map((a) => a.id),
        [newest.id, oldest.id],
      )
    })

    it("refuses a cursor of the list's former shape (one key) with a 400 naming the cursor", async () => {
      const c = await company(t)
      const r = await listen('ok')
      const created = await endpoint(c.id, { url: r.url, event_types: ['contract.created'] })
      await deliveredTogether(c.id, r, 2)
      const url = `${companyEndpoints(c.id)}/${created.id}/deliveries`
      const first = await t.call({ url, query: { limit: '1' } })
      const cursor = new URL(/^<([^>]+)>/.exec(first.headers.link as string)![1]!, 'http://x').searchParams.get(
        'cursor',
      )!
      const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString())
      assert.equal(decoded.k.length, 2)
      const former = Buffer.from(JSON.stringify({ ...decoded, k: [decoded.k[0]] })).toString('base64url')
      const res = await t.call({ url, query: { limit: '1', cursor: former } })
      assert.equal(res.statusCode, 400)
      assert.match(JSON.stringify(res.json().errors), /querystring\/cursor/)
    })

    /** A company's endpoint with one first delivery made: its attempts' list answers it. */
    async function oneDelivered() {
      const c = await company(t)
      const r = await listen('ok')
      const created = await endpoint(c.id, { url: r.url, event_types: ['contract.created'] })
      await contract(t, c.id)
      await deliverNow()
      const url = `${companyEndpoints(c.id)}/${created.id}/deliveries`
      assert.equal((await t.json<any[]>(200, { url })).length, 1)
      return { c, created, url }
    }

    it('an endpoint deleted takes its first deliveries with it', async () => {
      const { c, created } = await oneDelivered()
      assert.equal(
        (await t.call({ method: 'DELETE', url: `${companyEndpoints(c.id)}/${created.id}`, token: c.token })).statusCode,
        204,
      )
      assert.equal((await t.call({ url: `${companyEndpoints(c.id)}/${created.id}/deliveries` })).statusCode, 404)
      assert.equal(
        await count(
          sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM webhook_delivered_batches WHERE endpoint_id = ${created.id}`,
        ),
        0,
      )
    })

    it("the events' retention deletes the first deliveries recorded before its cutoff", async () => {
      const { created, url } = await oneDelivered()
      // The retention's job is due by real time (and its next run by the business clock's too).
      const back = { clock: t.clock.now(), real: t.realClock.now() }
      const later = new Date(Date.now() + 31 * 86_400_000)
      t.clock.set(later)
      t.realClock.set(later)
      try {
        await t.app.services.scheduler.runDue()
      } finally {
        t.clock.set(back.clock)
        t.realClock.set(back.real)
      }
      assert.equal(
        await count(
          sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM webhook_delivered_batches WHERE endpoint_id = ${created.id}`,
        ),
        0,
      )
      assert.deepEqual(await t.json<any[]>(200, { url }), [])
    })
  },
)
