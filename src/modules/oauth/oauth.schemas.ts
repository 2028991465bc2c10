import { Type, type Static } from 'typebox'
import { Name, Uuid } from '../../http/schemas.ts'
import { SecretString } from '../../http/secret-fields.ts'

export const TokenRequest = Type.Object(
  {
    grant_type: Type.Optional(Type.String({ description: 'client_credentials' })),
    client_id: Type.Optional(Type.String({ maxLength: 200 })),
    client_secret: Type.Optional(Type.String({ maxLength: 200 })),
    scope: Type.Optional(
      Type.String({ maxLength: 4000, description: "Space-separated subset of the client's scopes" }),
    ),
  },
  { title: 'TokenRequest', description: 'Form-encoded or JSON; the credentials may come in HTTP Basic instead' },
)

export const TokenResponse = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Seconds' }),
    scope: Type.String(),
  },
  { additionalProperties: false, title: 'TokenResponse' },
)

export const TokenError = Type.Object(
  {
    error: Type.Union(
      ['invalid_client', 'invalid_request', 'invalid_scope', 'unauthorized_client', 'unsupported_grant_type'].map((e) =>
        Type.Literal(e),
      ),
      {
        description: "unauthorized_client (400): the credentials are right but the client's company is disabled",
      },
    ),
    error_description: Type.String(),
    errors: Type.String(),
    code: Type.String(),
  },
  {
    additionalProperties: false,
    title: 'TokenError',
    description: "RFC 6749 §5.2, with the service's errors and code beside",
  },
)

export const Jwks = Type.Object(
  { keys: Type.Array(Type.Object({}, { additionalProperties: true })) },
  { title: 'JWKS' },
)

const ScopeString = Type.String({ pattern: '^(read|write):[a-z_]+$', description: 'Such as read:team' })

export const ClientInput = Type.Object(
  {
    name: Name(200),
    scopes: Type.Array(ScopeString, { minItems: 1, maxItems: 100 }),
  },
  { additionalProperties: false, title: 'ClientInput' },
)
export type ClientInput = Static<typeof ClientInput>

export const CreatedClient = Type.Object(
  {
    client_id: Type.String(),
    client_secret: SecretString('The secret; only its hash is stored'),
    name: Type.String(),
    scopes: Type.Array(Type.String()),
  },
  { additionalProperties: false, title: 'CreatedClient' },
)

export const Client = Type.Object(
  {
    client_id: Type.String(),
    name: Type.String(),
    scopes: Type.Array(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, title: 'Client' },
)

export const ClientParams = Type.Object({
  company_id: Uuid(),
  client_id: Type.String({ minLength: 1, maxLength: 200 }),
})
