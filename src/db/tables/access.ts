import type { Generated } from 'kysely'
import type { Timestamp, CreatedAt, Json, JsonWithDefault } from './columns.ts'

export interface SigningKeysTable {
  kid: string
  private_jwk: Json<Record<string, unknown>>
  public_jwk: Json<Record<string, unknown>>
  created_at: CreatedAt
  /** Its place in the sequence of keys (unique). */
  generation: number
  /** When it starts signing; it is published from its creation. */
  active_from: Date
  /** When it stops verifying (null until a next key exists). */
  retire_at: Date | null
}

export interface OauthClientsTable {
  client_id: string
  secret_hash: string
  name: string
  company_id: string | null
  scopes: string[]
  created_at: CreatedAt
  revoked_at: Timestamp | null
}

/** Wrong secrets sent for one client_id, known or not, counted for every instance (oauth.guesses.ts). */
export interface ClientSecretGuessesTable {
  client_id: string
  /** The wrong secrets within the last minute, oldest first; emptied when they lock the id. */
  wrong_at: Date[]
  locked_until: Date | null
  /** When neither the window nor the lock holds anything more. */
  stale_at: Date
}

export interface IdempotencyKeysTable {
  owner: string
  key: string
  request_hash: string
  status_code: number | null
  response_headers: Json<Record<string, string>> | null
  response_body: string | null
  created_at: CreatedAt
}

export interface JobsTable {
  id: Generated<number>
  kind: string
  key: string
  /** Whose work it is (NULL: the platform's); the scheduler serves companies in turn. */
  company_id: string | null
  run_at: Timestamp
  payload: JsonWithDefault<Record<string, unknown>>
  attempts: Generated<number>
  last_error: string | null
  done_at: Timestamp | null
  created_at: CreatedAt
}
