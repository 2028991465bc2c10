import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto'
import { BoundedMap } from '../../core/bounded-map.ts'

/** A new endpoint secret: `whsec_` and 32 random bytes in base64 (Standard Webhooks). */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-id` (the event's id, the same on every
 * retry), `webhook-timestamp` (Unix seconds, real time: receivers check it against their clock),
 * `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`, keyed by the
 * secret's bytes: the base64 after `whsec_`), one signature per secret, space-separated: during a
 * rotation's grace the new secret's and the old one's, and a receiver accepts either.
 */
export function signatureHeaders(secrets: readonly string[], eventId: string, body: string, timestampSeconds: number): Record<string, string> {
  const signatures = secrets.map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(`${eventId}.${timestampSeconds}.${body}`).digest('base64')}`)
  return { 'webhook-id': eventId, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': signatures.join(' ') }
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
