import type { PaymentSource, ScheduledChange, SubscriptionRow } from '../../db/tables.ts'
import { termEnd, type PeriodUnit } from './billing.terms.ts'

/**
 * The subscription lifecycle with Chargebee's statuses, as pure functions of the stored row:
 *
 *   in_trial ──trial end, usable card──▶ active ──cancel at term end──▶ non_renewing
 *      │  └──trial end, no card, or cancel scheduled──▶ cancelled          │   ▲
 *      └──cancel now──▶ cancelled ◀──cancel now── active, non_renewing     │   └─remove scheduled cancellation
 *                                  ◀──term end──────────────────────────────┘
 *   active ──term end──▶ active (a new term, with the change scheduled for it if any)
 *   active ──pause now, or at the term end──▶ paused ──resume now, or on resume_date──▶ active (a new term)
 *
 * One thing at a time is scheduled for the term's end, the latest asked for, as at Chargebee: a
 * change, a cancellation or a pause each replaces the others.
 * The refusals (409) are checked by the service whatever the provider, so both engines refuse
 * the same things; the transitions are what the local provider does.
 */
export type BillingState = SubscriptionRow

/** Chargebee's credit_option_for_current_term_charges: `prorate` credits the unused term, `none` nothing. */
export interface Cancellation {
  endOfTerm: boolean
  reason: string | null
  message: string | null
  creditOption: 'prorate' | 'none'
}

export function cancelRefusal(s: BillingState, endOfTerm: boolean): string | null {
  if (s.status === 'cancelled') return 'The subscription is already cancelled'
  if (endOfTerm && s.cancel_scheduled_at) return 'A cancellation is already scheduled for this subscription'
  return null
}

/** Nothing scheduled for the term's end. */
const NOTHING_SCHEDULED = { scheduled_change: null, pause_date: null, resume_date: null } as const

export function cancel(s: BillingState, c: Cancellation, now: Date): BillingState {
  const reasons = { cancellation_reason: c.reason, cancellation_message: c.message, ...NOTHING_SCHEDULED }
  if (c.endOfTerm) {
    if (s.status === 'in_trial') return { ...s, ...reasons, cancel_scheduled_at: s.trial_end }
    return { ...s, ...reasons, status: 'non_renewing', cancel_scheduled_at: s.current_term_end }
  }
  return { ...s, ...reasons, status: 'cancelled', cancelled_at: now, cancel_scheduled_at: null, current_term_end: now }
}

export function removalRefusal(s: BillingState): string | null {
  if (s.status === 'cancelled' || !s.cancel_scheduled_at) return 'No cancellation is scheduled for this subscription'
  return null
}

export function removeScheduledCancellation(s: BillingState): BillingState {
  return {
    ...s,
    status: s.status === 'non_renewing' ? 'active' : s.status,
    cancel_scheduled_at: null,
    cancellation_reason: null,
    cancellation_message: null,
  }
}

export function changeRefusal(s: BillingState): string | null {
  if (s.status === 'cancelled') return 'A cancelled subscription cannot be changed'
  if (s.status === 'paused') return 'A paused subscription cannot be changed: resume it first (PUT .../resume)'
  return null
}

export function scheduleRefusal(s: BillingState): string | null {
  const refusal = changeRefusal(s)
  if (refusal) return refusal
  if (s.status !== 'active' && s.status !== 'non_renewing')
    return `A subscription ${s.status} has no term to end: change it now (end_of_term false)`
  return null
}

/** A scheduled cancellation or pause gives way to the change. */
export function scheduleChange(s: BillingState, change: ScheduledChange): BillingState {
  return {
    ...s,
    ...NOTHING_SCHEDULED,
    scheduled_change: change,
    status: s.status === 'non_renewing' ? 'active' : s.status,
    cancel_scheduled_at: null,
    cancellation_reason: null,
    cancellation_message: null,
  }
}

export function removalOfChangesRefusal(s: BillingState): string | null {
  return s.scheduled_change ? null : 'No change is scheduled for this subscription'
}

export function removeScheduledChanges(s: BillingState): BillingState {
  return { ...s, scheduled_change: null }
}

/** The subscription holding the scheduled choice, as the renewal bills it. */
export function withScheduledChange(s: BillingState): BillingState {
  const c = s.scheduled_change
  if (!c) return s
  return {
    ...s,
    plan_sku: c.plan_sku,
    plan_quantity: c.plan_quantity,
    addons: c.addons,
    coupon_code: c.coupon_code,
    scheduled_change: null,
  }
}

export type PauseOption = 'immediately' | 'end_of_term'

export function pauseRefusal(s: BillingState): string | null {
  if (s.status === 'cancelled') return 'A cancelled subscription cannot be paused'
  if (s.status === 'paused') return 'The subscription is already paused'
  if (s.status === 'non_renewing')
    return 'A cancellation is scheduled for this subscription: remove it first (remove_scheduled_cancellation)'
  if (s.status !== 'active') return `A subscription ${s.status} cannot be paused: only an active one can`
  if (s.pause_date) return 'A pause is already scheduled for this subscription'
  return null
}

/** A pause at the term's end leaves the term paid and replaces a scheduled change. */
export function pause(s: BillingState, option: PauseOption, resumeDate: Date | null, now: Date): BillingState {
  if (option === 'end_of_term')
    return { ...s, ...NOTHING_SCHEDULED, pause_date: s.current_term_end, resume_date: resumeDate }
  return { ...s, ...NOTHING_SCHEDULED, status: 'paused', pause_date: now, resume_date: resumeDate }
}

export function resumeRefusal(s: BillingState): string | null {
  return s.status === 'paused' ? null : `Only a paused subscription can be resumed; this one is ${s.status}`
}

/** A new term from `at`, billed then. */
export function resume(s: BillingState, at: Date, unit: PeriodUnit): BillingState {
  return {
    ...s,
    ...NOTHING_SCHEDULED,
    status: 'active',
    current_term_start: at,
    current_term_end: termEnd(at, unit),
    billing_anchor_day: at.getUTCDate(),
  }
}

/** It expires after the last day of its expiry month. */
export function usableCard(card: PaymentSource | null, at: Date): boolean {
  if (!card) return false
  return card.expiry_year * 12 + card.expiry_month >= at.getUTCFullYear() * 12 + at.getUTCMonth() + 1
}

export function atTrialEnd(s: BillingState, unit: PeriodUnit): BillingState | null {
  if (s.status !== 'in_trial' || !s.trial_end) return null
  const at = s.trial_end
  if (s.cancel_scheduled_at || !usableCard(s.payment_source, at)) {
    return { ...s, status: 'cancelled', cancelled_at: at, cancel_scheduled_at: null, current_term_end: at }
  }
  const anchor = at.getUTCDate()
  return {
    ...s,
    status: 'active',
    current_term_start: at,
    current_term_end: termEnd(at, unit, anchor),
    billing_anchor_day: anchor,
  }
}

export function atTermEnd(s: BillingState, unit: PeriodUnit): BillingState | null {
  const end = s.current_term_end
  if (!end) return null
  if (s.status === 'active' && s.pause_date?.getTime() === end.getTime()) {
    return { ...s, status: 'paused', scheduled_change: null }
  }
  if (s.status === 'active') {
    return {
      ...s,
      current_term_start: end,
      current_term_end: termEnd(end, unit, s.billing_anchor_day ?? end.getUTCDate()),
    }
  }
  if (s.status === 'non_renewing') {
    return { ...s, status: 'cancelled', cancelled_at: end, cancel_scheduled_at: null }
  }
  return null
}
