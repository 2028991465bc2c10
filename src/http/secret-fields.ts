import { Type } from 'typebox'

/**
 * Secrets shown once (a client's `client_secret`, a webhook endpoint's `secret`): a route
 * declares them in its answer's schema with `SecretString`, and that one declaration makes the
 * answer `Cache-Control: no-store`, keeps the field out of the Idempotency-Key store (a replay
 * shows it `null`) and documents both in /openapi.json (src/http/idempotency.ts, openapi-document.ts).
 */

/** The schema keyword that marks a field as a secret (OpenAPI 3.1 allows `x-` keywords in a schema). */
const SECRET_KEYWORD = 'x-secret'

/** A secret field of an answer: the string in the answer that made it, `null` in a replay of that answer. */
export const SecretString = (description: string) => Type.Union([Type.String(), Type.Null()], {
  [SECRET_KEYWORD]: true,
  description: `${description}. Shown in this answer only (sent with Cache-Control: no-store); null when the answer is an Idempotency-Key replay (Idempotent-Replayed: true)`,
})

type Schema = Record<string, any>

/** The top-level fields of an object schema that are secrets. */
export function secretFieldsOf(schema: unknown): string[] {
  const properties = (schema as Schema | undefined)?.properties
  if (!properties || typeof properties !== 'object') return []
  return Object.entries(properties as Record<string, Schema>).filter(([, s]) => s?.[SECRET_KEYWORD] === true).map(([name]) => name)
}

/** A route's secret fields, by the status of the answer that carries them (only statuses that carry some). */
export function secretsByStatus(response: unknown): Map<number, string[]> {
  const out = new Map<number, string[]>()
  for (const [status, schema] of Object.entries((response ?? {}) as Record<string, unknown>)) {
    const fields = secretFieldsOf(schema)
    if (fields.length > 0 && /^\d{3}$/.test(status)) out.set(Number(status), fields)
  }
  return out
}

/**
 * The JSON answer with each of `fields` (top level) set to null, its keys in the order they had.
 * Null when the answer is not a JSON object: nothing of it can be kept safely.
 */
export function withoutSecrets(payload: string, fields: string[]): string | null {
  let body: unknown
  try {
    body = JSON.parse(payload)
  } catch {
    return null
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null
  const record = body as Record<string, unknown>
  let changed = false
  for (const field of fields) {
    if (field in record && record[field] !== null) {
      record[field] = null
      changed = true
    }
  }
  return changed ? JSON.stringify(record) : payload
}
