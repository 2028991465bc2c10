import assert from 'node:assert/strict'
import type { TestApp } from './app.ts'
import { receiver, type Behaviour } from './receivers.ts'

export type Receiver = Awaited<ReturnType<typeof receiver>>

export const companyEndpoints = (companyId: string) => `/api/v1/companies/${companyId}/webhook_endpoints`

/**
 * The common steps of a webhook endpoints suite: receivers to deliver to (kept in `receivers`,
 * which the suite closes when it sees fit) and endpoints made through the API (201 asserted; a
 * null company makes a platform endpoint). `app` answers the suite's app once `before` built it.
 */
export function endpointSteps(app: () => TestApp, options: { slowMs?: number } = {}) {
  const receivers: Receiver[] = []
  async function deliverAt(when: Date | string) {
    const t = app()
    const back = t.realClock.now()
    t.realClock.set(when)
    try {
      await t.app.services.webhookDelivery.runDue()
      await t.app.services.webhookDelivery.settled()
    } finally {
      t.realClock.set(back)
    }
  }
  return {
    receivers,
    async listen(behaviour: Behaviour = 'ok') {
      const r = await receiver(behaviour, options)
      receivers.push(r)
      return r
    },
    /** Runs the deliveries due at `when` (real time) and waits for their outcomes; the clock goes back after (tokens stay valid). */
    deliverAt,
    /** Runs the deliveries due a second from now (past the database's time, which dates the writes) and waits for their outcomes. */
    deliverNow: () => deliverAt(new Date(Date.now() + 1000)),
    async endpoint(companyId: string | null, body: Record<string, unknown>, token?: string) {
      const res = await app().call({
        method: 'POST',
        url: companyId ? companyEndpoints(companyId) : '/api/v1/webhook_endpoints',
        token,
        body,
      })
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    },
  }
}
