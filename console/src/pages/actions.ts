import { useEffect, useState } from 'preact/hooks'
import { offers } from '../api.ts'
import { decimals } from '../i18n.ts'

export const SUB = '/api/v1/subscription/{company_id}'
/** Routes other work adds: offered when the running service's /openapi.json lists them. */
const PENDING = {
  refund: ['post', `${SUB}/invoices/{invoice_id}/refund`],
  creditNote: ['post', `${SUB}/credit_notes`],
  credits: ['post', `${SUB}/promotional_credits`],
  charge: ['post', `${SUB}/charges`],
  pause: ['put', `${SUB}/pause`],
  resume: ['put', `${SUB}/resume`],
  /** Changes at the term's end (`end_of_term` on the update) come with this route. */
  scheduled: ['put', `${SUB}/remove_scheduled_changes`],
} as const
type Pending = keyof typeof PENDING

export function useOffered(): Set<Pending> {
  const [set, setSet] = useState(new Set<Pending>())
  useEffect(() => {
    Promise.all(
      (Object.keys(PENDING) as Pending[]).map(async (k) => ((await offers(PENDING[k][0], PENDING[k][1])) ? k : null)),
    ).then((ks) => setSet(new Set(ks.filter((k): k is Pending => k !== null))))
  }, [])
  return set
}

export const REASONS = [
  'order_change',
  'order_cancellation',
  'product_unsatisfactory',
  'service_unsatisfactory',
  'waiver',
  'other',
] as const

/** A typed amount in major units as minor units of the currency (null when not a positive amount). */
export function toMinor(text: string, currency: string): number | null {
  const digits = decimals(currency)
  const n = Number(text.replace(',', '.'))
  return Number.isFinite(n) && n > 0 ? Math.round(n * 10 ** digits) : null
}

export const sub = (companyId: string) => `/api/v1/subscription/${encodeURIComponent(companyId)}`
