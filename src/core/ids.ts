import { createHash } from 'node:crypto'

/**
 * A UUID derived from a name (RFC 9562 version 8, from SHA-256): the same name gives the same id.
 * For ids that a retry must find again, so that what a first attempt made elsewhere (a customer
 * at Chargebee) is the same object on the retry, never a second one.
 */
export function uuidFromName(name: string): string {
  const h = createHash('sha256').update(name).digest('hex')
  const variant = ((Number.parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`
}
