import { isIP } from 'node:net'

/** Settings whose form a type cannot say, parsed from their text; a wrong one stops the start naming it. */

/** DUNNING_RETRY_DAYS as days after the invoice's date, strictly increasing; empty: no retry. */
export function dunningRetryDays(setting: string): number[] {
  const entries = setting
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const days = entries.map(Number)
  const refuse = () =>
    new Error(
      `Invalid configuration: DUNNING_RETRY_DAYS must be increasing whole days from 1 to 365, comma-separated ` +
        `(at most 10), like 1,3,5; got "${setting}"`,
    )
  if (days.length > 10 || entries.some((e) => !/^\d{1,3}$/.test(e))) throw refuse()
  if (days.some((d, i) => d < 1 || d > 365 || (i > 0 && d <= days[i - 1]!))) throw refuse()
  return days
}

export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== ''
  } catch {
    return false
  }
}

/**
 * TRUST_PROXY as Fastify's trustProxy: '' trusts none; addresses or CIDRs (the safe form); or a hop
 * count, safe only when nothing reaches the service except through those proxies.
 */
export function trustProxy(setting: string): false | string[] | ((address: string, hop: number) => boolean) {
  const value = setting.trim()
  if (value === '' || value === 'false') return false
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    return (_address, hop) => hop < hops
  }
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/')
    const family = isIP(address ?? '')
    const maxBits = family === 6 ? 128 : 32
    if (
      family === 0 ||
      extra !== undefined ||
      (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= maxBits))
    ) {
      throw new Error(
        `Invalid configuration: TRUST_PROXY entry "${entry}" must be a hop count, or addresses or CIDRs like ` +
          `10.0.0.0/8, comma-separated`,
      )
    }
  }
  return entries
}

/**
 * CORS_ORIGINS as browsers send Origin: `scheme://host[:port]`, lower case, no default port.
 * A path, query, credentials, another scheme or `*` is refused: an origin is compared whole.
 */
export function corsOrigins(setting: string): string[] {
  const origins: string[] = []
  for (const raw of setting.split(',')) {
    const entry = raw.trim()
    if (entry === '') continue
    const refuse = () =>
      new Error(
        `Invalid configuration: CORS_ORIGINS entry "${entry}" must be an origin like https://app.example.com ` +
          `(scheme://host[:port], no path)`,
      )
    if (!/^https?:\/\/[^/?#@\s]+$/i.test(entry)) throw refuse()
    let url: URL
    try {
      url = new URL(entry)
    } catch {
      throw refuse()
    }
    origins.push(url.origin)
  }
  return origins
}
