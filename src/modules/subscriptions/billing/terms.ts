/**
 * Billing terms, as Chargebee counts them: a term is one period (month or year) long and ends
 * on the subscription's anchor day; in a month too short for it, on that month's last day, and
 * the next term goes back to the anchor (Jan 31 → Feb 28/29 → Mar 31 → Apr 30 → May 31).
 * Computed in UTC, keeping the time of day of the term's start.
 */
export type PeriodUnit = 'month' | 'year'

function daysInMonth(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate()
}

/** The end of the term that starts at `start`: one period later, on `anchorDay` (or the month's last day). */
export function termEnd(start: Date, unit: PeriodUnit, anchorDay: number = start.getUTCDate()): Date {
  const months = unit === 'year' ? 12 : 1
  const total = start.getUTCFullYear() * 12 + start.getUTCMonth() + months
  const year = Math.floor(total / 12)
  const month = total % 12
  const day = Math.min(anchorDay, daysInMonth(year, month))
  return new Date(Date.UTC(year, month, day, start.getUTCHours(), start.getUTCMinutes(), start.getUTCSeconds(), start.getUTCMilliseconds()))
}

/** Unix seconds, the unit of billing timestamps in the API; null stays null. */
export function unixSeconds(at: Date | null | undefined): number | null {
  return at ? Math.floor(at.getTime() / 1000) : null
}
