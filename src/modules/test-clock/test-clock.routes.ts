import type { App } from '../../http/app-types.ts'
import { outsideRequestScope } from '../../db/request-transaction.ts'
import type { TestClockService } from './test-clock.service.ts'
import { TestClock, TestClockAdvance } from './test-clock.schemas.ts'

const PATH = '/api/v1/test_clock'
const WHAT_MOVES =
  'The business clock moves billing (trials, renewals, the estimate\'s "now"), communications (send_at, ' +
  'deliveries, recurrences), hosted page expiry and the timestamps of records; tokens, signing keys, rate limits ' +
  'and idempotency keys stay on real time. Every instance on the database shares it.'

/** The test clock (docs/test-clock.md): registered only with TEST_CLOCK_ENABLED, so a 404 otherwise. */
export async function testClockRoutes(app: App, { service }: { service: TestClockService }) {
  const tags = ['Test clock']

  app.get(
    PATH,
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'getTestClock',
        tags,
        summary: 'Read the business clock',
        description:
          `Platform clients only (any token of one; a company's token is a 403). Only with TEST_CLOCK_ENABLED (404 ` +
          `otherwise). ${WHAT_MOVES} Changes nothing.`,
        response: { 200: TestClock },
      },
    },
    async () => service.get(),
  )

  app.post(
    `${PATH}/advance`,
    {
      // Its jobs commit on their own, so it cannot run in a keyed request's transaction; it needs no key.
      config: { access: 'platform', idempotencyKeys: false },
      schema: {
        operationId: 'advanceTestClock',
        tags,
        summary: 'Move the business clock forward and run what falls due',
        description:
          `Platform clients with the platform write scope only (a company's token is a 403). Only with ` +
          `TEST_CLOCK_ENABLED (404 otherwise). Moves the business time of every instance to \`to\` in steps, one ` +
          `per due time, running each job with its own due time as now (a renewal on 1 February is dated 1 ` +
          `February on the way to 1 June), jobs made by jobs included; answers once every job due by \`to\` has ` +
          `run, with the clock at \`to\`. \`to\` before the business time now, or more than 10 years after it: ` +
          `400. Another advance in progress: 409. It takes no Idempotency-Key (one sent is ignored): an advance ` +
          `to the \`to\` the clock already stands at changes nothing. ${WHAT_MOVES}`,
        body: TestClockAdvance,
        response: { 200: TestClock },
      },
    },
    async (request) =>
      // The advance's jobs commit on their own, never in a keyed request's transaction (http/idempotency.ts).
      outsideRequestScope(() => service.advance(request.body.to)),
  )
}
