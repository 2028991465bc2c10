import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import pino from 'pino'
import { systemClock } from '../src/clock.ts'
import { createWebhookDelivery } from '../src/modules/webhook-endpoints/delivery.ts'
import { createWebhookEndpointsRepository, type WebhookEndpointsRepository } from '../src/modules/webhook-endpoints/webhook-endpoints.repository.ts'
import { buildTestApp, engines, type TestApp } from './helpers/app.ts'
import { company, contract, subsidiary } from './helpers/factories.ts'
import { createComm } from './communications.fixtures.ts'
import { eventually } from './helpers/eventually.ts'

/**
 * What a successful write wakes (src/app.ts, the onResponse hook): a scheduler pass only when the
 * request scheduled a job, a delivery pass only when an endpoint is enabled somewhere. Before, every
 * write (every token issue included) woke both, and in a mix of writes over 1,000 companies with
 * no endpoint those passes cost the server ~9 % of its CPU (bench/findings.md). The polls here are
 * a minute long, so a pass within seconds was woken for; the waits are generous on purpose.
 */
const POLL_MS = 60_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const engine of engines) {
  describe(`the scheduler woken by writes on ${engine}`, () => {
    let t: TestApp
    let ran = 0
    before(async () => {
      t = await buildTestApp(engine, { SCHEDULER_ENABLED: true, SCHEDULER_POLL_MS: POLL_MS })
      t.app.services.scheduler.register('test.woken', async () => { ran++ })
      // The pass at start has run and found nothing: the next one is a minute away unless woken.
      await sleep(300)
    })
    after(async () => { await t?.close() })

    /** A due job written as another instance would: this one's scheduler is not told. */
    const dueJob = (key: string) => t.app.database.db.insertInto('jobs')
      .values({ kind: 'test.woken', key, run_at: new Date(t.clock.now().getTime() - 1000), payload: '{}' }).execute()

    it('a write that schedules no job wakes no pass', async () => {
      const c = await company(t)
      // Its creation scheduled the subscription's jobs: the pass that woke has run before the due job is written.
      await sleep(300)
      await dueJob(randomUUID())
      const before = ran
      await contract(t, c.id)
      await t.tokenFor(c.client.client_id, c.client.client_secret)
      await sleep(1000)
      assert.equal(ran, before, 'a pass ran after writes that scheduled nothing')
    })

    it('a write that schedules a job wakes a pass after its commit, which runs what is due', { timeout: 30_000 }, async () => {
      const c = await company(t)
      const s = await subsidiary(t, c.id)
      await sleep(300)
      await dueJob(randomUUID())
      const before = ran
      // Its own job is due in 2099; the wake-up after its commit runs the job due now.
      await createComm(t, c, { destination_subsidiary_ids: [s] })
      assert.ok(await eventually(async () => ran, (n) => n > before, 10_000) > before, 'the job due was left for the poll')
    })
  })

  describe(`the webhook delivery loop woken by writes on ${engine}`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(engine) })
    after(async () => { await t?.close() })

    /** A second delivery loop on the app's database, polling every minute, counting its claims and looks. */
    function countingLoop() {
      const repo = createWebhookEndpointsRepository(t.app.database.db)
      const counts = { claims: 0, looks: 0 }
      const counted: WebhookEndpointsRepository = {
        ...repo,
        claimDue: (...args) => { counts.claims++; return repo.claimDue(...args) },
        anyEnabled: () => { counts.looks++; return repo.anyEnabled() },
      }
      const loop = createWebhookDelivery({ repo: counted, clock: systemClock, log: pino({ level: 'silent' }), timeoutMs: 1000, allowPrivateTargets: true, pollMs: POLL_MS })
      return { loop, counts }
    }

    it('with no endpoint enabled, writes look once and wake no pass; an endpoint created here wakes the next', { timeout: 30_000 }, async () => {
      const { loop, counts } = countingLoop()
      loop.start()
      try {
        assert.equal(await eventually(async () => counts.claims, (n) => n === 1), 1, 'the pass at start')
        for (let i = 0; i < 10; i++) loop.afterWrite()
        await sleep(500)
        assert.deepEqual(counts, { claims: 1, looks: 1 }, 'ten writes with no endpoint')

        const c = await company(t)
        await t.json(201, { method: 'POST', url: `/api/v1/companies/${c.id}/webhook_endpoints`, body: { url: 'https://hooks.example.com/wakeups' } })
        loop.endpointsChanged()
        loop.afterWrite()
        assert.equal(await eventually(async () => counts.claims, (n) => n === 2, 10_000), 2, 'the write after the creation woke no pass')
        assert.equal(counts.looks, 2)
      } finally {
        await loop.stop()
      }
    })

    it('an instance that has not looked yet finds an endpoint another one created', { timeout: 30_000 }, async () => {
      const { loop, counts } = countingLoop()
      loop.start()
      try {
        assert.equal(await eventually(async () => counts.claims, (n) => n === 1), 1, 'the pass at start')
        // The suite's endpoint above is enabled: this loop was never told of it.
        loop.afterWrite()
        assert.equal(await eventually(async () => counts.claims, (n) => n === 2, 10_000), 2, 'the write woke no pass')
        assert.equal(counts.looks, 1)
      } finally {
        await loop.stop()
      }
    })
  })
}
