import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto'
import { BoundedMap } from '../../core/bounded-map.ts'

/** A new endpoint secret: `whsec_` and 32 random bytes in base64 (Standard Webhooks). */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/**
 * Standard Webhooks headers: `webhook-id` (the event's, same on every retry), `webhook-timestamp`
 * (real time) and `webhook-signature`, one `v1,` HMAC per secret so a receiver accepts either
 * during a rotation's grace.
 */
export function signatureHeaders(
  secrets: readonly string[],
  eventId: string,
  body: string,
  timestampSeconds: number,
): Record<string, string> {
  const signatures = secrets.map(
    (secret) =>
      `v1,${createHmac('sha256', keyOf(secret)).update(`${eventId}.${timestampSeconds}.${body}`).digest('base64')}`,
  )
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signatures.join(' '),
  }
}

/**
 * Secrets' keys, decoded once each (a delivery signs with one or two). Beyond KEYS_KEPT the one
 * decoded first goes; a rotated-out or deleted endpoint's key stays in this process's memory until
 * then, as the secret itself does in the rows read by each delivery pass.
 */
const KEYS_KEPT = 1000
const keys = new BoundedMap<string, KeyObject>(KEYS_KEPT)

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret)
  if (key === undefined) {
    key = createSecretKey(Buffer.from(secret.slice('whsec_'.length), 'base64'))
    keys.set(secret, key)
  }
  return key
}
