import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import pino from 'pino'
import { manualClock } from '../src/core/clock.ts'
import { createEventPresenter } from '../src/modules/events/event-objects.ts'
import { createWebhookDelivery } from '../src/modules/webhook-endpoints/delivery.ts'
import {
  createWebhookEndpointsRepository,
  type WebhookEndpointsRepository,
} from '../src/modules/webhook-endpoints/webhook-endpoints.repository.ts'
import { company, contract, subsidiary } from './helpers/factories.ts'
import { createComm } from './communications.fixtures.ts'
import { eventually } from './helpers/eventually.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * What a successful write wakes (src/app.ts, the onResponse hook): a scheduler pass only when the
 * request scheduled a job, a delivery pass only when an endpoint is enabled somewhere: woken by every
 * write (every token issue included), those passes cost a busy server a share of its CPU for
 * nothing. The polls here are a minute long, so a pass within seconds was woken for; the waits are
 * generous on purpose.
 */
const POLL_MS = 60_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

onEachEngine('the scheduler woken by writes', { SCHEDULER_ENABLED: true, SCHEDULER_POLL_MS: POLL_MS }, (t, engine) => {
  let ran = 0
  before(async () => {
    t.app.services.scheduler.register('test.woken', async () => {
      ran++
    })
    // The pass at start has run and found nothing: the next one is a minute away unless woken.
    await sleep(300)
  })

  /** A due job written as another instance would: this one's scheduler is not told. */
  const dueJob = (key: string) =>
    t.app.database.db
      .insertInto('jobs')
      .values({ kind: 'test.woken', key, run_at: new Date(t.clock.now().getTime() - 1000), payload: '{}' })
      .execute()

  /**
   * Waits until the passes that earlier requests woke have run: a marker job, a pass asked for,
   * the marker seen run, then a pause for a pass that may follow it.
   */
  async function quiet() {
    const before = ran
    await dueJob(randomUUID())
    t.app.services.scheduler.wake()
    assert.ok(
      (await eventually(
        async () => ran,
        (n) => n > before,
        10_000,
      )) > before,
      'the marker job never ran',
    )
    await sleep(200)
  }

  it('a write that schedules no job wakes no pass', async () => {
    const c = await company(t)
    // Its creation scheduled the subscription's jobs, and woke a pass: let it run first.
    await quiet()
    await dueJob(randomUUID())
    const before = ran
    await contract(t, c.id)
    await t.tokenFor(c.client.client_id, c.client.client_secret)
    await sleep(1000)
    assert.equal(ran, before, 'a pass ran after writes that scheduled nothing')
  })

  it('a write that schedules a job wakes a pass after its commit, which runs what is due', {
    timeout: 30_000,
  }, async () => {
    const c = await company(t)
    const s = await subsidiary(t, c.id)
    await quiet()
    await dueJob(randomUUID())
    const before = ran
    // Its own job is due in 2099; the wake-up after its commit runs the job due now.
    await createComm(t, c, { destination_subsidiary_ids: [s] })
    assert.ok(
      (await eventually(
        async () => ran,
        (n) => n > before,
        10_000,
      )) > before,
      'the job due was left for the poll',
    )
  })

  it('a job whose transaction commits after its own wake-up runs once the answer wakes a pass', {
    timeout: 30_000,
    skip:
      engine === 'pglite'
        ? 'PGlite is one session: a pass waits for the open transaction, so it never looks before the commit'
        : false,
  }, async () => {
    await quiet()
    const before = ran
    const startedAt = performance.now()
    // As a keyed request's work (http/idempotency.ts): the job's row commits at the end.
    await t.app.database.db.transaction().execute(async (trx) => {
      await t.app.services.scheduler.schedule(trx, {
        kind: 'test.woken',
        key: randomUUID(),
        runAt: new Date(t.clock.now().getTime() - 1000),
      })
      // The pass its scheduling woke runs meanwhile, and cannot see the row.
      await sleep(300)
    })
    await sleep(300)
    assert.equal(ran, before, 'the pass before the commit saw the job: this test shows nothing')
    t.app.services.scheduler.wakeAfterRequest(startedAt)
    assert.ok(
      (await eventually(
        async () => ran,
        (n) => n > before,
        10_000,
      )) > before,
      'the job waited for the poll',
    )
  })
})

onEachEngine('the webhook delivery loop woken by writes', (t) => {
  /**
   * Runs `work` with a second delivery loop on the app's database, started (its pass at start
   * seen), polling every minute, counting its claims and looks; its clock stands still unless
   * `work` moves it (what a look found is kept a second). The loop is stopped afterwards.
   */
  async function withCountingLoop(work: (loop: ReturnType<typeof countingLoop>) => Promise<void>) {
    const counting = countingLoop()
    counting.loop.start()
    try {
      assert.equal(
        await eventually(
          async () => counting.counts.claims,
          (n) => n === 1,
        ),
        1,
        'the pass at start',
      )
      await work(counting)
    } finally {
      await counting.loop.stop()
    }
  }

  function countingLoop() {
    const repo = createWebhookEndpointsRepository(t.app.database.db)
    const counts = { claims: 0, looks: 0 }
    const counted: WebhookEndpointsRepository = {
      ...repo,
      claimDue: (...args) => {
        counts.claims++
        return repo.claimDue(...args)
      },
      anyEnabled: () => {
        counts.looks++
        return repo.anyEnabled()
      },
    }
    const clock = manualClock(new Date())
    const loop = createWebhookDelivery({
      repo: counted,
      clock,
      log: pino({ level: 'silent' }),
      timeoutMs: 1000,
      allowPrivateTargets: true,
      pollMs: POLL_MS,
      presenter: createEventPresenter({}),
    })
    return { loop, counts, clock }
  }

  const createEndpoint = async () => {
    const c = await company(t)
    await t.json(201, {
      method: 'POST',
      url: `/api/v1/companies/${c.id}/webhook_endpoints`,
      body: { url: 'https://hooks.example.com/wakeups' },
    })
  }

  it('with no endpoint enabled, writes look once a second and wake no pass; one made elsewhere is found by the look a second later', {
    timeout: 30_000,
  }, async () => {
    assert.equal(
      await t.app.database.db
        .selectFrom('webhook_endpoints')
        .select('id')
        .where('enabled', '=', true)
        .executeTakeFirst(),
      undefined,
      'an endpoint is enabled already',
    )
    await withCountingLoop(async ({ loop, counts, clock }) => {
      for (let i = 0; i < 10; i++) loop.afterWrite()
      await sleep(500)
      assert.deepEqual(counts, { claims: 1, looks: 1 }, 'ten writes with no endpoint')

      // Made on another instance (the app): within the second, this one does not look again.
      await createEndpoint()
      loop.afterWrite()
      await sleep(500)
      assert.deepEqual(counts, { claims: 1, looks: 1 }, 'a write within the second')
      // A second later, the next write looks, finds it, and wakes a pass.
      clock.advance(1000)
      loop.afterWrite()
      assert.equal(
        await eventually(
          async () => counts.claims,
          (n) => n === 2,
          10_000,
        ),
        2,
        'the write a second later woke no pass',
      )
      assert.equal(counts.looks, 2)
    })
  })

  it('an endpoint made on this instance is taken for enabled without a look (its row may not be committed yet)', {
    timeout: 30_000,
  }, async () => {
    await withCountingLoop(async ({ loop, counts }) => {
      loop.endpointsChanged()
      loop.afterWrite()
      assert.equal(
        await eventually(
          async () => counts.claims,
          (n) => n === 2,
          10_000,
        ),
        2,
        'the write after the creation woke no pass',
      )
      assert.equal(counts.looks, 0)
    })
  })

  it('an instance that has not looked yet finds an endpoint another one made', { timeout: 30_000 }, async () => {
    await createEndpoint()
    await withCountingLoop(async ({ loop, counts }) => {
      loop.afterWrite()
      assert.equal(
        await eventually(
          async () => counts.claims,
          (n) => n === 2,
          10_000,
        ),
        2,
        'the write woke no pass',
      )
      assert.equal(counts.looks, 1)
    })
  })
})
