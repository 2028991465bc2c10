import { describe, it, afterEach, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { buildTestApp, type TestApp } from './helpers/app.ts'
import { engines } from './helpers/databases.ts'
import { eventually } from './helpers/eventually.ts'
import { company } from './helpers/factories.ts'
import { lazyChild } from '../src/http/lazy-child-logger.ts'

/**
 * Running behind a balancer (issue 18): the client's address through TRUST_PROXY, load shedding,
 * readiness while stopping, and what each request's log lines say. None of it depends on the
 * engine: PGlite only.
 */
let t: TestApp | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

function logSink() {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    },
  })
  return { lines, logger: pino({ level: 'info' }, sink) }
}

// Anonymous requests to an API route: each counts against its address's budget, then is a 401.
const anonymous = (forwardedFor: string) =>
  t!.call({
    url: '/api/v1/companies/00000000-0000-4000-8000-000000000000',
    token: null,
    headers: { 'x-forwarded-for': forwardedFor },
  })

describe('TRUST_PROXY', () => {
  it('behind a trusted proxy, the rate limit and the log see the address it forwards', async () => {
    const { lines, logger } = logSink()
    // app.inject's requests come from 127.0.0.1: the proxy here.
    t = await buildTestApp(engines[0]!, { TRUST_PROXY: '127.0.0.1/32', RATE_LIMIT_MAX: 2 }, { logger })
    assert.equal((await anonymous('203.0.113.5')).statusCode, 401)
    assert.equal((await anonymous('203.0.113.5')).statusCode, 401)
    assert.equal((await anonymous('203.0.113.5')).statusCode, 429)
    // Another client behind the same proxy has a budget of its own.
    assert.equal((await anonymous('198.51.100.7')).statusCode, 401)
    const incoming = lines
      .filter((l) => l.msg === 'incoming request' && /companies/.test((l.req as { url: string }).url))
      .map((l) => (l.req as { remoteAddress: string }).remoteAddress)
    assert.deepEqual(incoming, ['203.0.113.5', '203.0.113.5', '203.0.113.5', '198.51.100.7'])
  })

  it('a hop count of 1 (one balancer) takes the address the balancer appended, not what the client wrote', async () => {
    t = await buildTestApp(engines[0]!, { TRUST_PROXY: '1', RATE_LIMIT_MAX: 1 })
    // The client claims an address; the balancer (the one hop trusted) appended the real one.
    assert.equal((await anonymous('10.9.9.9, 203.0.113.5')).statusCode, 401)
    assert.equal(
      (await anonymous('10.9.9.8, 203.0.113.5')).statusCode,
      429,
      'what the client wrote itself is not believed',
    )
  })

  it('unset, X-Forwarded-For is not believed: a client cannot buy budgets by writing it', async () => {
    t = await buildTestApp(engines[0]!, { RATE_LIMIT_MAX: 3 })
    // One budget, 127.0.0.1's (the helper's token request took one of its three already).
    const answers = [
      await anonymous('203.0.113.5'),
      await anonymous('203.0.113.6'),
      await anonymous('203.0.113.7'),
    ].map((r) => r.statusCode)
    assert.equal(answers.at(-1), 429, String(answers))
  })
})

describe('load shedding', () => {
  it('over a threshold, API routes answer 503 + Retry-After; /health, /ready and /metrics still answer', async () => {
    t = await buildTestApp(engines[0]!, { SHED_EVENT_LOOP_DELAY_MS: 50, SHED_RETRY_AFTER_SECONDS: 7 })
    assert.equal((await t.call({ url: '/api/v1/subscription/plans' })).statusCode, 200, 'not shed while idle')
    // The event loop kept blocked, 200 ms at a time, for as long as the checks run: each sample of
    // under-pressure (one a second) sees a mean delay far over 50 ms, whatever the requests wait
    // for in between. Blocking only before each request left the loop idle while a probe waited
    // on PostgreSQL, long enough once (CI, Node 24) for a sample to fall under the threshold and
    // the next API request to pass.
    const pressure = setInterval(() => {
      const until = Date.now() + 200
      while (Date.now() < until) {
        /* the load */
      }
    }, 1)
    let token: Awaited<ReturnType<TestApp['call']>> | undefined
    try {
      const shed = await eventually(
        () => t!.call({ url: '/api/v1/subscription/plans' }),
        (r) => r.statusCode === 503,
        15_000,
      )
      assert.equal(shed.statusCode, 503, shed.body)
      assert.equal(shed.headers['retry-after'], '7')
      assert.match(shed.json().errors, /overloaded/)
      for (const url of ['/health', '/ready', '/metrics']) {
        assert.equal((await t.call({ url, token: null })).statusCode, 200, url)
        // Still under pressure at that moment: an API route next to it is shed.
        assert.equal((await t.call({ url: '/api/v1/subscription/plans' })).statusCode, 503, `after ${url}`)
      }
      token = await t.call({
        method: 'POST',
        url: '/oauth/token',
        token: null,
        body: { grant_type: 'client_credentials' },
      })
    } finally {
      clearInterval(pressure)
    }
    assert.equal(token?.statusCode, 503)
  })
})

describe('logging at LOG_LEVEL=warn', () => {
  it('a request that writes no line makes no child logger; a line it writes carries its bindings', async () => {
    const lines: Array<Record<string, unknown>> = []
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)))
        done()
      },
    })
    const logger = pino({ level: 'warn' }, sink)
    // Every child made from this logger, or from a child of it (pino's children inherit from their parent).
    let children = 0
    const child = logger.child
    logger.child = function (this: typeof logger, ...args: Parameters<typeof child>) {
      children++
      return child.apply(this, args)
    } as typeof child
    t = await buildTestApp(engines[0]!, {}, { logger })
    const c = await company(t)
    const portal = await t.call({
      url: `/api/v1/subscription/${c.id}/portal/?redirect_url=${encodeURIComponent('http://localhost/back')}`,
    })
    assert.equal(portal.statusCode, 200, portal.body)
    const path = new URL(portal.json().access_url).pathname

    const before = children
    for (const token of [undefined, c.token])
      assert.equal((await t.call({ url: `/api/v1/companies/${c.id}`, token })).statusCode, 200)
    assert.equal((await t.call({ url: `/api/v1/companies/${c.id}/nothing-here`, token: c.token })).statusCode, 404)
    assert.equal(children, before, 'no child logger for requests that wrote no line')
    assert.equal(lines.length, 0, JSON.stringify(lines))

    // A refused form writes a warn line: its request's id and trace id are on it, and its URL's token is not.
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
    const refused = await t.call({
      method: 'POST',
      url: `${path}/cancel`,
      token: null,
      body: 'csrf=wrong',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      },
    })
    assert.equal(refused.statusCode, 403)
    assert.equal(lines.length, 1, JSON.stringify(lines))
    assert.equal(lines[0]!.msg, 'hosted page form refused')
    assert.equal(lines[0]!.reqId, refused.headers['x-request-id'])
    assert.equal(lines[0]!.trace_id, traceId)
    assert.ok(!JSON.stringify(lines).includes(path.split('/').pop()!), 'the page token is not on the line')
    assert.ok(children > before, 'the line was written through a child')
  })

  it('a lazy child writes the very line of a pino child, its own children too, and makes none for a level that is off', () => {
    const written: string[] = []
    const sink = new Writable({
      write(chunk, _enc, done) {
        written.push(String(chunk))
        done()
      },
    })
    const root = pino({ level: 'warn', timestamp: false }, sink)
    let made = 0
    const lazy = lazyChild(root, () => {
      made++
      return root.child({ reqId: 'r1', trace_id: 't1' })
    })
    const client = lazy.child({ client_id: 'c1', company_id: null })
    client.info('not written')
    lazy.debug('not written either')
    assert.equal(made, 0, 'no child for lines at a level that is off')
    assert.equal(lazy.level, 'warn')
    client.warn({ code: 'x' }, 'written')
    root
      .child({ reqId: 'r1', trace_id: 't1' })
      .child({ client_id: 'c1', company_id: null })
      .warn({ code: 'x' }, 'written')
    assert.equal(made, 1)
    assert.equal(written.length, 2)
    assert.equal(written[0], written[1])
    // Once made, its level is its own: set on the lazy child, it holds for its later lines.
    lazy.level = 'info'
    lazy.info('now written')
    assert.equal(written.length, 3)
    assert.match(written[2]!, /"reqId":"r1".*"msg":"now written"/)
  })
})

describe('with the default settings', () => {
  const { lines, logger } = logSink()
  let d: TestApp
  before(async () => {
    d = await buildTestApp(engines[0]!, {}, { logger })
  })
  after(async () => {
    await d?.close()
  })

  it('log lines name the client and company of the token, and the trace id of a W3C traceparent', async () => {
    const c = await company(d)
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
    lines.length = 0
    const res = await d.call({
      url: `/api/v1/companies/${c.id}`,
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    })
    assert.equal(res.statusCode, 200, res.body)
    const completed = lines.find((l) => l.msg === 'request completed')
    assert.ok(completed, JSON.stringify(lines))
    assert.equal(completed.client_id, 'test-admin')
    assert.equal(completed.company_id, null)
    assert.equal(completed.trace_id, traceId)
    assert.equal(completed.parent_span_id, '00f067aa0ba902b7')
    assert.equal(lines.find((l) => l.msg === 'incoming request')?.trace_id, traceId)

    // A company's own client: its company on the line.
    lines.length = 0
    assert.equal(
      (
        await d.call({
          url: `/api/v1/companies/${c.id}`,
          token: c.token,
          headers: { traceparent: 'not-a-traceparent' },
        })
      ).statusCode,
      200,
    )
    const own = lines.find((l) => l.msg === 'request completed')!
    assert.equal(own.client_id, c.client.client_id)
    assert.equal(own.company_id, c.id)
    assert.equal(own.trace_id, undefined, 'a malformed traceparent is ignored')
  })

  // Last: the app is stopping from here on.
  it('/ready answers 503 once the instance is stopping, while /health still answers 200', async () => {
    assert.equal((await d.call({ url: '/ready', token: null })).statusCode, 200)
    d.app.readiness.stopping = true
    const res = await d.call({ url: '/ready', token: null })
    assert.equal(res.statusCode, 503)
    assert.equal(res.headers['retry-after'], '1')
    assert.equal((await d.call({ url: '/health', token: null })).statusCode, 200)
  })
})
