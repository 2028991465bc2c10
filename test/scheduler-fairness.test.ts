import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import { company, subsidiary, contract } from './helpers/factories.ts'
import { DELIVERY_JOB } from '../src/modules/communications/communications.delivery.ts'
import { createComm, report } from './communications.fixtures.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Companies are served fairly: one company's backlog of due work does not keep another
 * company's due job waiting behind it. Expressed in claims (the order the scheduler runs jobs
 * in), never in time.
 */
const BACKLOG = 200

/** Runs every due job and answers the companies whose deliveries were claimed, in claim order. */
async function deliveryOrder(t: TestApp): Promise<string[]> {
  const scheduler = t.app.services.scheduler
  const deliver = t.app.services.communications.delivery.deliverOccurrence
  const order: string[] = []
  scheduler.register(DELIVERY_JOB, async (ctx) => {
    order.push(String(ctx.payload.company_id))
    await deliver(ctx)
  })
  try {
    await scheduler.runDue()
  } finally {
    scheduler.register(DELIVERY_JOB, deliver)
  }
  return order
}

onEachEngine('scheduler fairness', (t) => {
  it("runs another company's one due job within the first claims, ahead of a backlog due earlier", async () => {
    const a = await company(t)
    const b = await company(t)
    const sa = await subsidiary(t, a.id)
    const sb = await subsidiary(t, b.id)
    await contract(t, a.id, { subsidiary_id: sa })
    await contract(t, b.id, { subsidiary_id: sb })
    const now = t.clock.now().getTime()
    // A's backlog is due an hour before B's job: ordered by due time alone, B would come last.
    for (let i = 0; i < BACKLOG; i++) {
      await createComm(t, a, { send_at: new Date(now - 3_600_000 + i).toISOString(), destination_subsidiary_ids: [sa] })
    }
    await createComm(t, b, { send_at: new Date(now).toISOString(), destination_subsidiary_ids: [sb] })

    const order = await deliveryOrder(t)
    assert.equal(order.filter((id) => id === a.id).length, BACKLOG)
    assert.deepEqual(
      order.filter((id) => id === b.id),
      [b.id],
    )
    const claimOfB = order.indexOf(b.id)
    assert.ok(claimOfB <= 2, `B's job was claim ${claimOfB + 1} of ${order.length}`)
  })

  it('keeps a company that has just been served behind one that has not', async () => {
    const [a, b, c] = [await company(t), await company(t), await company(t)]
    const now = t.clock.now().getTime()
    const dests = new Map<string, string>()
    for (const x of [a, b, c]) {
      const s = await subsidiary(t, x.id)
      await contract(t, x.id, { subsidiary_id: s })
      dests.set(x.id, s)
    }
    for (let i = 0; i < 6; i++)
      await createComm(t, a, {
        send_at: new Date(now - 60_000 + i).toISOString(),
        destination_subsidiary_ids: [dests.get(a.id)!],
      })
    for (let i = 0; i < 3; i++)
      await createComm(t, b, {
        send_at: new Date(now - 30_000 + i).toISOString(),
        destination_subsidiary_ids: [dests.get(b.id)!],
      })
    await createComm(t, c, { send_at: new Date(now).toISOString(), destination_subsidiary_ids: [dests.get(c.id)!] })

    const order = await deliveryOrder(t)
    const name = new Map([
      [a.id, 'A'],
      [b.id, 'B'],
      [c.id, 'C'],
    ])
    // Round robin, the company with the oldest due job first in a round: A B C, then A B, then A alone.
    assert.equal(order.map((id) => name.get(id)).join(''), 'ABCABABAAA')
  })
})

onEachEngine('scheduler lanes', (t) => {
  it('files every job of a company under that company, deliveries and subscription jobs alike; only platform work has none', async () => {
    const a = await company(t) // its subscription's trial end is a job
    const s = await subsidiary(t, a.id)
    await createComm(t, a, { destination_subsidiary_ids: [s] })
    const rows = await t.app.database.db
      .selectFrom('jobs')
      .select(['kind', 'company_id', 'payload'])
      .where('done_at', 'is', null)
      .execute()
    const ofA = rows.filter((r) => (r.payload as Record<string, unknown>).company_id === a.id)
    assert.deepEqual(ofA.map((r) => r.kind).sort(), ['communication.delivery', 'subscription.trial_end'])
    assert.deepEqual(
      ofA.map((r) => r.company_id),
      [a.id, a.id],
    )
    const platform = rows.filter((r) => r.company_id === null).map((r) => r.kind)
    assert.ok(
      platform.every((kind) => !kind.startsWith('communication.') && !kind.startsWith('subscription.')),
      platform.join(', '),
    )
  })
})

onEachEngine("a running scheduler's backlog", (t) => {
  it('leaves the event loop free to read requests between jobs: a request is answered before the backlog is over', {
    timeout: 120_000,
  }, async () => {
    const a = await company(t)
    const b = await company(t)
    const s = await subsidiary(t, a.id)
    await contract(t, a.id, { subsidiary_id: s })
    const now = t.clock.now().getTime()
    for (let i = 0; i < BACKLOG; i++)
      await createComm(t, a, { send_at: new Date(now - 60_000 + i).toISOString(), destination_subsidiary_ids: [s] })
    const scheduler = t.app.services.scheduler
    const deliver = t.app.services.communications.delivery.deliverOccurrence
    const order: string[] = []
    scheduler.register(DELIVERY_JOB, async (ctx) => {
      order.push('delivery')
      await deliver(ctx)
    })
    // Over a real socket: app.inject would not wait for the event loop to read anything.
    const base = await t.app.listen({ host: '127.0.0.1', port: 0 })
    try {
      scheduler.start()
      const res = await fetch(`${base}/api/v1/companies/${b.id}/communications`, {
        headers: { authorization: `Bearer ${b.token}` },
      })
      assert.equal(res.status, 200)
      order.push('answered')
      while (order.filter((x) => x === 'delivery').length < BACKLOG) {
        // A delivery that failed would back off for seconds: say so now, not at the test's timeout.
        const failed = await t.app.database.db
          .selectFrom('jobs')
          .select('last_error')
          .where('company_id', '=', a.id)
          .where('last_error', 'is not', null)
          .executeTakeFirst()
        assert.equal(failed?.last_error, undefined, 'a delivery of the backlog failed')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    } finally {
      await scheduler.stop()
      scheduler.register(DELIVERY_JOB, deliver)
    }
    const answeredAt = order.indexOf('answered')
    // Before, a pass on PGlite never yielded: the request was read only once all BACKLOG deliveries were done.
    assert.ok(answeredAt < BACKLOG, `the request was answered after ${answeredAt} of ${BACKLOG} deliveries`)
  })
})

onEachEngine('scheduler timers', { SCHEDULER_ENABLED: true }, (t) => {
  it('sets no timer beyond 2^31-1 ms: a monthly series scheduled raises no TimeoutOverflowWarning', async () => {
    const warnings: Error[] = []
    const listener = (w: Error) => {
      warnings.push(w)
    }
    process.on('warning', listener)
    try {
      const c = await company(t)
      const s = await subsidiary(t, c.id)
      await contract(t, c.id, { subsidiary_id: s })
      // Due now: the running scheduler delivers it and, within its pass, schedules the next
      // occurrence a month away: a delay beyond what one Node timer can hold, so the timer must be clamped.
      const dueNow = new Date(t.clock.now().getTime() - 60_000).toISOString()
      const id = await createComm(t, c, {
        send_at: dueNow,
        recurrent: 'monthly',
        recurrent_until: '2099-12-31',
        destination_subsidiary_ids: [s],
      })
      const deadline = Date.now() + 20_000
      while ((await report(t, c, id)).length === 0) {
        assert.ok(Date.now() < deadline, 'the running scheduler never delivered the occurrence due')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      // Node emits the warning on the next tick after setTimeout.
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', listener)
    }
    assert.deepEqual(
      warnings.filter((w) => w.name === 'TimeoutOverflowWarning').map((w) => w.message),
      [],
    )
  })
})
