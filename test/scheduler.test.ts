import { it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { systemClock } from '../src/core/clock.ts'
import { createScheduler } from '../src/jobs/scheduler.ts'
import { openTestDatabase } from './helpers/databases.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/**
 * The running scheduler (the other tests call runDue() themselves) starts a job when it falls
 * due, not at its next poll: the poll here is a minute, so a job that runs within seconds was
 * woken for. The bounds are generous on purpose: this is about which wake-up ran it, not speed.
 */
const POLL_MS = 60_000

// Its own setup: a scheduler over a bare database, without an app.
forEachEngine('the running scheduler', (engine) => {
  let database: Awaited<ReturnType<typeof openTestDatabase>>
  let scheduler: ReturnType<typeof createScheduler>
  const ran = new Map<string, (at: number) => void>()

  before(async () => {
    database = await openTestDatabase(engine)
    scheduler = createScheduler({
      db: database.db,
      clock: systemClock,
      log: pino({ level: 'silent' }),
      pollMs: POLL_MS,
    })
    scheduler.register('test.wake', async ({ key }) => {
      ran.get(key)?.(Date.now())
    })
  })
  after(async () => {
    await scheduler?.stop()
    await database?.close()
    await database?.drop()
  })

  const runs = (key: string) => new Promise<number>((resolve) => ran.set(key, resolve))

  it('runs a job it schedules when the job falls due, not at the next poll', { timeout: 15_000 }, async () => {
    scheduler.start()
    // Let the first pass (at start) find nothing and wait for its minute.
    await new Promise((r) => setTimeout(r, 200))
    const due = Date.now() + 400
    const done = runs('own')
    await scheduler.schedule(database.db, { kind: 'test.wake', key: 'own', runAt: new Date(due) })
    const at = await done
    assert.ok(at >= due, `ran ${due - at} ms before it was due`)
    assert.ok(at - due < 10_000, `ran ${at - due} ms after it was due`)
  })

  it('runs a job another instance scheduled when it falls due, once a pass has seen it', {
    timeout: 15_000,
  }, async () => {
    await scheduler.stop()
    const due = Date.now() + 1_500
    // Written as another instance would: this one is not told.
    await database.db
      .insertInto('jobs')
      .values({ kind: 'test.wake', key: 'other', run_at: new Date(due), payload: '{}' })
      .execute()
    const done = runs('other')
    scheduler.start()
    const at = await done
    assert.ok(at >= due, `ran ${due - at} ms before it was due`)
    assert.ok(at - due < 10_000, `ran ${at - due} ms after it was due`)
  })
})

// Its own setup: a scheduler over a bare database, without an app.
/**
 * SCHEDULER_CONCURRENCY: the polling loop claims several jobs at once, even of one lane (one
 * company's backlog, here the platform's). Each handler waits, inside its job's transaction, until
 * four are under way together: one worker at a time would never get there (each would wait out
 * the 20 s and the test fails on the count). PostgreSQL only: PGlite is one session, where the app
 * runs one job at a time (src/app.ts), and a second transaction waits for the first.
 */
forEachEngine(
  "the scheduler's concurrent workers",
  (engine) => {
    it('runs four due jobs of one lane at once with concurrency 4', { timeout: 60_000 }, async () => {
      const database = await openTestDatabase(engine)
      const scheduler = createScheduler({
        db: database.db,
        clock: systemClock,
        log: pino({ level: 'silent' }),
        pollMs: POLL_MS,
        concurrency: 4,
      })
      let active = 0
      let most = 0
      const done: string[] = []
      let allDone: () => void
      const finished = new Promise<void>((resolve) => {
        allDone = resolve
      })
      scheduler.register('test.together', async ({ key }) => {
        active++
        most = Math.max(most, active)
        for (let waited = 0; active < 4 && most < 4 && waited < 20_000; waited += 20)
          await new Promise((r) => setTimeout(r, 20))
        active--
        done.push(key)
        if (done.length === 4) allDone()
      })
      try {
        for (let i = 0; i < 4; i++)
          await scheduler.schedule(database.db, {
            kind: 'test.together',
            key: `j${i}`,
            runAt: new Date(Date.now() - 1000),
          })
        scheduler.start()
        await finished
        assert.equal(most, 4, `at most ${most} jobs ran at once`)
        assert.deepEqual([...done].sort(), ['j0', 'j1', 'j2', 'j3'])
      } finally {
        await scheduler.stop()
        await database.close()
        await database.drop()
      }
    })
  },
  (engine) => ({ skip: engine === 'pglite' ? 'PGlite is one database session: one job at a time' : false }),
)

// Its own setup: a scheduler over a bare database, without an app.
/**
 * A graceful stop (SIGTERM) waits for the jobs in flight, not for the whole pass: once stop() is
 * called no worker claims another job, so the jobs still due stay due for the next instance. It
 * used to run the pass to its end (up to 1,000 jobs) before stop() resolved.
 */
forEachEngine('stopping the running scheduler', (engine) => {
  it('finishes the job in flight and leaves the other due jobs for the next instance', {
    timeout: 60_000,
  }, async () => {
    const database = await openTestDatabase(engine)
    const scheduler = createScheduler({
      db: database.db,
      clock: systemClock,
      log: pino({ level: 'silent' }),
      pollMs: POLL_MS,
      concurrency: 1,
    })
    const ran: string[] = []
    let started: () => void
    const firstStarted = new Promise<void>((resolve) => {
      started = resolve
    })
    let release: () => void
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    scheduler.register('test.stop', async ({ key }) => {
      ran.push(key)
      started()
      await released
    })
    try {
      for (let i = 0; i < 3; i++)
        await scheduler.schedule(database.db, {
          kind: 'test.stop',
          key: `j${i}`,
          runAt: new Date(Date.now() - 1000 + i),
        })
      scheduler.start()
      await firstStarted
      let stopResolved = false
      const stopping = scheduler.stop().then(() => {
        stopResolved = true
      })
      // Yield to every pending callback: stop() must still be waiting for the job in flight.
      await new Promise((resolve) => setImmediate(resolve))
      assert.equal(stopResolved, false, 'stop() resolved while a job was in flight')
      release!()
      await stopping
      assert.deepEqual(ran, ['j0'])
      const pending = await database.db
        .selectFrom('jobs')
        .select('key')
        .where('kind', '=', 'test.stop')
        .where('done_at', 'is', null)
        .orderBy('key')
        .execute()
      assert.deepEqual(
        pending.map((j) => j.key),
        ['j1', 'j2'],
      )
    } finally {
      await scheduler.stop()
      await database.close()
      await database.drop()
    }
  })
})
