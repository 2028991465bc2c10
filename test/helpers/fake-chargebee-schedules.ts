import { addPeriod, CbError } from './fake-chargebee-billing.ts'

type Obj = Record<string, any>
type Route = [string, RegExp, (m: RegExpMatchArray, p: Obj) => Obj]

/**
 * The scheduling half of the fake Chargebee (fake-chargebee.ts): a change for the term's end
 * (update_for_items with change_option end_of_term), its removal, pause and resume. One thing is
 * scheduled at a time: a change, a cancellation or a pause replaces the others.
 */
export function fakeChargebeeSchedules(deps: {
  routes: Route[]
  now: () => number
  touch: (s: Obj) => Obj
  wrap: (s: Obj) => Obj
  subscriptionOf: (id: string) => Obj
}) {
  const { routes, now, touch, wrap, subscriptionOf } = deps
  const invalidState = (message: string) => new CbError(409, 'invalid_state_for_request', message, 'invalid_request')
  const id = (m: RegExpMatchArray) => decodeURIComponent(m[1]!)

  /** Drops what was scheduled for the term's end (a cancellation stays with its own route). */
  function unschedule(s: Obj) {
    delete s.scheduled_changes
    s.has_scheduled_changes = false
    if (s.status === 'active') {
      delete s.pause_date
      delete s.resume_date
    }
  }

  /** update_for_items with change_option end_of_term: kept until the term's end; no invoice. */
  function scheduleChange(s: Obj, items: Obj[], coupons: Obj[]): Obj {
    if (s.status !== 'active' && s.status !== 'non_renewing')
      throw invalidState(`A subscription ${s.status} has no term to end`)
    unschedule(s)
    if (s.status === 'non_renewing') Object.assign(s, { status: 'active', next_billing_at: s.current_term_end })
    delete s.cancelled_at
    s.scheduled_changes = { subscription_items: items, coupons }
    s.has_scheduled_changes = true
    return wrap(touch(s))
  }

  routes.push(
    // Remove scheduled changes (apidocs.chargebee.com/docs/api/subscriptions#remove_scheduled_changes): none is 409.
    [
      'POST',
      /^\/subscriptions\/([^/]+)\/remove_scheduled_changes$/,
      (m) => {
        const s = subscriptionOf(id(m))
        if (!s.has_scheduled_changes) throw invalidState('No changes are scheduled for this subscription')
        delete s.scheduled_changes
        s.has_scheduled_changes = false
        return wrap(touch(s))
      },
    ],
    // Pause a subscription (apidocs.chargebee.com/docs/api/subscriptions#pause_a_subscription): active only.
    [
      'POST',
      /^\/subscriptions\/([^/]+)\/pause$/,
      (m, p) => {
        const s = subscriptionOf(id(m))
        if (s.status !== 'active') throw invalidState(`A subscription ${s.status} cannot be paused`)
        unschedule(s)
        const resume = p.resume_date ? { resume_date: Number(p.resume_date) } : {}
        if (p.pause_option === 'end_of_term') Object.assign(s, { pause_date: s.current_term_end, ...resume })
        else Object.assign(s, { status: 'paused', pause_date: now(), next_billing_at: undefined, ...resume })
        return wrap(touch(s))
      },
    ],
    // Resume a subscription (apidocs.chargebee.com/docs/api/subscriptions#resume_a_subscription): a new term from now.
    [
      'POST',
      /^\/subscriptions\/([^/]+)\/resume$/,
      (m) => {
        const s = subscriptionOf(id(m))
        if (s.status !== 'paused') throw invalidState('Only a paused subscription can be resumed')
        const start = now()
        const end = addPeriod(start, 'month')
        delete s.pause_date
        delete s.resume_date
        Object.assign(s, { status: 'active', current_term_start: start, current_term_end: end, next_billing_at: end })
        return wrap(touch(s))
      },
    ],
  )

  return { scheduleChange, unschedule }
}
