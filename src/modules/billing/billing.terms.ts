// Billing terms as Chargebee counts them: one period long, ending on the anchor day or a short
// month's last day (Jan 31 → Feb 28/29 → Mar 31). UTC, keeping the start's time of day.
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
  return new Date(
    Date.UTC(
      year,
      month,
      day,
      start.getUTCHours(),
      start.getUTCMinutes(),
      start.getUTCSeconds(),
      start.getUTCMilliseconds(),
    ),
  )
}

/** Unix seconds, the unit of billing timestamps in the API; null stays null. */
export function unixSeconds(at: Date | null | undefined): number | null {
  return at ? Math.floor(at.getTime() / 1000) : null
}
