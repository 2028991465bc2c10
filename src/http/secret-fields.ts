import { Type } from 'typebox'

/**
 * Secrets shown once: declaring a field `SecretString` in a route's answer schema makes the answer
 * `no-store`, keeps it out of the Idempotency-Key store (a replay shows `null`) and documents both.
 */

/** OpenAPI 3.1 allows `x-` keywords in a schema. */
const SECRET_KEYWORD = 'x-secret'

export const SecretString = (description: string) =>
  Type.Union([Type.String(), Type.Null()], {
    [SECRET_KEYWORD]: true,
    description:
      `${description}. Shown in this answer only (sent with Cache-Control: no-store); null when the answer is an ` +
      `Idempotency-Key replay (Idempotent-Replayed: true)`,
  })

type Schema = Record<string, any>

export function secretFieldsOf(schema: unknown): string[] {
  const properties = (schema as Schema | undefined)?.properties
  if (!properties || typeof properties !== 'object') return []
  return Object.entries(properties as Record<string, Schema>)
    .filter(([, s]) => s?.[SECRET_KEYWORD] === true)
    .map(([name]) => name)
}

export function secretsByStatus(response: unknown): Map<number, string[]> {
  const out = new Map<number, string[]>()
  for (const [status, schema] of Object.entries((response ?? {}) as Record<string, unknown>)) {
    const fields = secretFieldsOf(schema)
    if (fields.length > 0 && /^\d{3}$/.test(status)) out.set(Number(status), fields)
  }
  return out
}

/** null when the answer is not a JSON object: nothing of it can be kept safely. */
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
