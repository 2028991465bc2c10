import { it, after } from 'node:test'
import assert from 'node:assert/strict'
import { company, contract } from './helpers/factories.ts'
import { eventually } from './helpers/eventually.ts'
import { companyEndpoints, endpointSteps } from './helpers/webhook-endpoints.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** What /metrics tells an operator (src/http/metrics.ts), and METRICS_TOKEN's protection of it. */
const METRICS_TOKEN = 'metrics-token-0123456789abcdef'

/** The value of one series of the exposition text, e.g. `scheduler_jobs_due` or `x_total{kind="a"}`. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

onEachEngine('metrics', { METRICS_TOKEN, RATE_LIMIT_MAX: 30, WEBHOOK_ALLOW_PRIVATE_TARGETS: true }, (t) => {
  const { receivers, listen, endpoint, deliverNow } = endpointSteps(() => t)
  after(async () => {
    for (const r of receivers) await r.close()
  })

  const scrape = async () => {
    const res = await t.call({ url: '/metrics', token: null, headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    assert.equal(res.statusCode, 200, res.body)
    return res.body
  }

  it('with METRICS_TOKEN, /metrics answers 401 without it or with another one', async () => {
    assert.equal((await t.call({ url: '/metrics', token: null })).statusCode, 401)
    const wrong = await t.call({
      url: '/metrics',
      token: null,
      headers: { authorization: 'Bearer not-the-metrics-token' },
    })
    assert.equal(wrong.statusCode, 401)
    assert.match(wrong.json().errors, /METRICS_TOKEN/)
    // A platform token is not the metrics token either.
    assert.equal((await t.call({ url: '/metrics' })).statusCode, 401)
    assert.match(await scrape(), /^http_request_duration_seconds_bucket/m)
  })

  it("the scheduler: jobs due, the oldest one's wait, failures by kind", async () => {
    const { scheduler } = t.app.services
    scheduler.register('metrics-test-failing', async () => {
      throw new Error('always fails')
    })
    const now = t.clock.now()
    // The service's own jobs (key rotation, purges) may be due too: counted from here.
    const baseline = value(await scrape(), 'scheduler_jobs_due')!
    await scheduler.schedule(t.app.database.db, {
      kind: 'metrics-test-failing',
      key: 'a',
      runAt: new Date(now.getTime() - 90_000),
    })
    await scheduler.schedule(t.app.database.db, {
      kind: 'metrics-test-failing',
      key: 'b',
      runAt: new Date(now.getTime() - 30_000),
    })
    // Not due yet: not counted.
    await scheduler.schedule(t.app.database.db, {
      kind: 'metrics-test-failing',
      key: 'c',
      runAt: new Date(now.getTime() + 60_000),
    })
    let text = await scrape()
    assert.equal(
      value(text, 'scheduler_jobs_due'),
      baseline + 2,
      text
        .split('\n')
        .filter((l) => l.includes('scheduler'))
        .join('\n'),
    )
    assert.ok(value(text, 'scheduler_oldest_due_seconds')! >= 90)
    await scheduler.runDue()
    text = await scrape()
    assert.equal(value(text, 'scheduler_job_failures_total{kind="metrics-test-failing"}'), 2)
    // Retried later (backoff), as every job that ran: nothing is due any more.
    assert.equal(value(text, 'scheduler_jobs_due'), 0)
    assert.equal(value(text, 'scheduler_oldest_due_seconds'), 0)
  })

  it('the cached reads: answers by read, from the cache or read', async () => {
    const c = await company(t)
    await t.app.services.readCache.heardUpToNow()
    const before = await scrape()
    const series = (outcome: string) => `read_cache_answers_total{read="holidays",outcome="${outcome}"}`
    for (let i = 0; i < 3; i++) await t.json(200, { url: `/api/v1/companies/${c.id}/holidays`, token: c.token })
    const text = await scrape()
    assert.equal((value(text, series('miss')) ?? 0) - (value(before, series('miss')) ?? 0), 1)
    assert.equal((value(text, series('hit')) ?? 0) - (value(before, series('hit')) ?? 0), 2)
  })

  it('the database pool: connections in use and requests waiting', async () => {
    // Read while the scrape's own queries (the scheduler's gauges) hold connections: at most those.
    const text = await scrape()
    const inUse = value(text, 'db_pool_connections_in_use')
    const waiting = value(text, 'db_pool_connections_waiting')
    assert.ok(inUse !== undefined && inUse >= 0 && inUse <= 2, String(inUse))
    assert.ok(waiting !== undefined && waiting >= 0 && waiting <= 2, String(waiting))
  })

  it('billing provider calls by provider, operation and outcome', async () => {
    await company(t)
    const text = await scrape()
    const calls = value(
      text,
      'billing_provider_call_duration_seconds_count{provider="local",operation="createSubscription",outcome="ok"}',
    )
    assert.ok(
      calls !== undefined && calls >= 1,
      text
        .split('\n')
        .filter((l) => l.includes('billing'))
        .join('\n'),
    )
  })

  it("events written, webhook attempts by outcome, and each endpoint's oldest event not delivered yet", async () => {
    const c = await company(t)
    const ok = await endpoint(c.id, { url: (await listen('ok')).url, event_types: ['contract.created'] })
    const failing = await endpoint(c.id, { url: (await listen('fail')).url, event_types: ['contract.created'] })
    const oldest = (text: string, id: string) =>
      value(text, `webhook_oldest_pending_delivery_seconds{endpoint_id="${id}"}`)
    let text = await scrape()
    const written = value(text, 'events_written_total{type="contract.created"}') ?? 0
    const succeeded = value(text, 'webhook_delivery_attempts_total{outcome="succeeded"}') ?? 0
    assert.equal(oldest(text, ok.id), undefined)
    await contract(t, c.id)
    // Written, not fanned out yet: both endpoints are owed it.
    text = await scrape()
    assert.equal(value(text, 'events_written_total{type="contract.created"}'), written + 1)
    assert.ok(
      oldest(text, ok.id)! >= 0,
      text
        .split('\n')
        .filter((l) => l.includes('webhook'))
        .join('\n'),
    )
    assert.ok(oldest(text, failing.id)! >= 0)
    await deliverNow()
    // Delivered to one; the other's retry is owed.
    text = await scrape()
    assert.equal(value(text, 'webhook_delivery_attempts_total{outcome="succeeded"}'), succeeded + 1)
    assert.ok(value(text, 'webhook_delivery_attempts_total{outcome="failed"}')! >= 1)
    assert.equal(oldest(text, ok.id), undefined)
    assert.ok(oldest(text, failing.id)! >= 0)
    assert.equal(
      (await t.call({ method: 'DELETE', url: `${companyEndpoints(c.id)}/${failing.id}`, token: c.token })).statusCode,
      204,
    )
  })

  it('an event whose first call is under way is still owed to its endpoint', async () => {
    const c = await company(t)
    const r = await listen('never')
    const hanging = await endpoint(c.id, { url: r.url, event_types: ['contract.created'] })
    await contract(t, c.id)
    const back = t.realClock.now()
    t.realClock.set(new Date(Date.now() + 1000))
    try {
      await t.app.services.webhookDelivery.runDue()
      await eventually(
        async () => r.received.length,
        (n) => n === 1,
      )
      const text = await scrape()
      assert.ok(
        value(text, `webhook_oldest_pending_delivery_seconds{endpoint_id="${hanging.id}"}`)! >= 0,
        text
          .split('\n')
          .filter((l) => l.includes('oldest'))
          .join('\n'),
      )
    } finally {
      t.realClock.set(back)
      r.release()
      await t.app.services.webhookDelivery.settled()
    }
    assert.equal(
      (await t.call({ method: 'DELETE', url: `${companyEndpoints(c.id)}/${hanging.id}`, token: c.token })).statusCode,
      204,
    )
  })

  it('rate-limit refusals', async () => {
    const before = value(await scrape(), 'rate_limit_refusals_total') ?? 0
    let refused = 0
    // Anonymous requests share the address's budget of 30 a window.
    for (let i = 0; i < 40; i++) {
      const res = await t.call({ url: '/api/v1/companies/00000000-0000-4000-8000-000000000000', token: null })
      if (res.statusCode === 429) refused++
    }
    assert.ok(refused > 0)
    assert.equal(value(await scrape(), 'rate_limit_refusals_total'), before + refused)
  })
})
