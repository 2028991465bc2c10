import type { PaymentSource, SubscriptionRow } from '../../db/tables.ts'
import { termEnd, type PeriodUnit } from './billing.terms.ts'

/**
 * The subscription lifecycle with Chargebee's statuses, as pure functions of the stored row:
 *
 *   in_trial ──trial end, usable card──▶ active ──cancel at term end──▶ non_renewing
 *      │  └──trial end, no card, or cancel scheduled──▶ cancelled          │   ▲
 *      └──cancel now──▶ cancelled ◀──cancel now── active, non_renewing     │   └─remove scheduled cancellation
 *                                  ◀──term end──────────────────────────────┘
 *   active ──term end──▶ active (a new term)
 *
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

export function cancel(s: BillingState, c: Cancellation, now: Date): BillingState {
  const reasons = { cancellation_reason: c.reason, cancellation_message: c.message }
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
  return s.status === 'cancelled' ? 'A cancelled subscription cannot be changed' : null
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
