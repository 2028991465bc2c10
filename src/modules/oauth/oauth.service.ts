import { randomBytes, randomUUID } from 'node:crypto'
import type { KeysetPage } from '../../db/keyset.ts'
import type { Paged } from '../../core/paging.ts'
import type { Clock } from '../../core/clock.ts'
import { Forbidden, NotFound, ServiceUnavailable, ValidationError } from '../../core/errors.ts'
import type { ClientRow, OauthRepository } from './oauth.repository.ts'
import type { TokenKeys } from './oauth.tokens.ts'
import type { AccessState } from './oauth.access.ts'
import type { TokenClients } from './oauth.token-clients.ts'
import {
  hashChosenSecret,
  hashGeneratedSecret,
  needsUpgrade,
  secretMatches,
  type SecretChecker,
} from './oauth.secrets.ts'
import type { SecretGuesses } from './oauth.guesses.ts'
import { ALL_SCOPE_STRINGS, authorizedScopes, liveFeatures, scopeStrings } from './scopes.ts'

/** An RFC 6749 §5.2 error of the token endpoint. */
export class OAuthError extends Error {
  constructor(
    readonly error:
      | 'invalid_client'
      | 'invalid_request'
      | 'invalid_scope'
      | 'unauthorized_client'
      | 'unsupported_grant_type',
    message: string,
  ) {
    super(message)
  }
}

export interface TokenRequest {
  grant_type?: string
  client_id?: string
  client_secret?: string
  scope?: string
}

export interface ClientView {
  client_id: string
  name: string
  scopes: string[]
  created_at: string
}

/**
 * Clients and their tokens. A company client's secret is 256 random bits, so one SHA-256 suffices
 * and keeps the token endpoint fast; a platform client's may be chosen by a person, so it is scrypt.
 */
export function createOauthService(deps: {
  repo: OauthRepository
  clients: Pick<TokenClients, 'find'>
  secrets: Pick<SecretChecker, 'matches' | 'configured'>
  /** Wrong secrets counted per client id across instances; too many lock it for a minute. */
  guesses: Pick<SecretGuesses, 'check' | 'checkKnown' | 'wrong'>
  keys: Pick<TokenKeys, 'sign'>
  access: Pick<AccessState, 'changed' | 'get'>
  clock: Clock
  companyScopes: (companyId: string) => Promise<string[] | undefined>
}) {
  const { repo, keys, clock } = deps
  // The server listens before the configured platform client's secret is settled (scrypt is slow):
  // a token request for it meanwhile waits rather than meeting the old stored secret.
  let settling: { clientId: string; done: Promise<unknown> } | undefined

  /** Re-hashes a matched platform secret stored in an older format, unless it changed meanwhile. */
  async function upgradeSecret(clientId: string, secret: string, stored: string) {
    if (await repo.replaceSecretHash(clientId, stored, await hashChosenSecret(secret))) {
      await deps.access.changed(clientId)
    }
  }

  return {
    async issueToken(request: TokenRequest) {
      if (request.grant_type === undefined) throw new OAuthError('invalid_request', 'grant_type is required')
      if (request.grant_type !== 'client_credentials')
        throw new OAuthError('unsupported_grant_type', 'Only client_credentials is supported')
      if (!request.client_id || !request.client_secret)
        throw new OAuthError('invalid_client', 'Client credentials are required')
      if (settling?.clientId === request.client_id) {
        // Not settled (the process is stopping): the stored secret may be the one rotated away.
        if (
          await settling.done.then(
            () => false,
            () => true,
          )
        )
          throw new ServiceUnavailable("The platform client's configured secret could not be stored; retry shortly")
      }
      // A locked id costs no hash nor read.
      await deps.guesses.check(request.client_id)
      const client = await deps.clients.find(request.client_id)
      // Unknown ids get no hash: the id is not the secret (RFC 6749 §2.2), and hashing for strangers would
      // take the slots known clients need (docs/adr/0005-guessing-coupons-and-secrets.md).
      const matched =
        client !== undefined &&
        client.revoked_at === null &&
        (await deps.secrets.matches(client.client_id, request.client_secret, client.secret_hash))
      if (!matched) {
        // Counted, or answered with the lock if it came meanwhile.
        await deps.guesses.wrong(request.client_id)
        throw new OAuthError('invalid_client', 'Unknown client or wrong secret')
      }
      // A right secret that waited while the id got locked answers as locked: a guess learns nothing.
      deps.guesses.checkKnown(request.client_id)
      if (client.company_id === null && needsUpgrade(client.secret_hash))
        await upgradeSecret(client.client_id, request.client_secret, client.secret_hash)
      // Said only to who holds the secret.
      if (client.company_id !== null && (await deps.access.get(client.client_id))?.companyDisabled) {
        throw new OAuthError('unauthorized_client', "The client's company is disabled")
      }
      let granted = client.scopes
      if (client.company_id !== null) {
        // A company's scopes can shrink with its plan: grant only what it still holds.
        const authorized = grantable(client.subscription_status, client.plan_features)
        granted = granted.filter((s) => authorized.has(s))
      }
      if (request.scope !== undefined && request.scope.trim() !== '') {
        const asked = [...new Set(request.scope.trim().split(/\s+/))]
        const refused = asked.find((s) => !granted.includes(s))
        if (refused !== undefined) throw new OAuthError('invalid_scope', `The client may not hold the scope ${refused}`)
        granted = asked
      }
      const scope = granted.join(' ')
      const { token, expiresIn } = await keys.sign({
        sub: client.client_id,
        scope,
        ...(client.company_id ? { company_id: client.company_id } : {}),
      })
      return { access_token: token, token_type: 'Bearer' as const, expires_in: expiresIn, scope }
    },

    async ensureAdminClient(configured: {
      id?: string
      secret?: string
    }): Promise<{ client_id: string; client_secret: string } | undefined> {
      if (configured.id && configured.secret) {
        const { id, secret } = configured
        const done = (async () => {
          // The configuration is the truth for this client: a rotated secret takes effect at start-up; a hash
          // that still fits it is kept.
          const stored = (await repo.findClientForToken(id))?.secret_hash
          const keep =
            stored !== undefined && !needsUpgrade(stored) && (await secretMatches(secret, stored, 'reserved'))
          const secret_hash = keep ? stored : await hashChosenSecret(secret, 'reserved')
          await repo.upsertPlatformClient({
            client_id: id,
            secret_hash,
            name: 'admin',
            company_id: null,
            scopes: [...ALL_SCOPE_STRINGS],
          })
          await deps.access.changed(id)
          // Its right secret then never waits for a hash behind guesses at other clients.
          deps.secrets.configured(id, secret, secret_hash)
        })()
        const mine = { clientId: id, done }
        settling = mine
        try {
          await done
        } finally {
          if (settling === mine) settling = undefined
        }
        return undefined
      }
      if ((await repo.countPlatformClients()) > 0) return undefined
      const client_id = `platform_${randomUUID()}`
      const client_secret = newSecret()
      // A platform client's secret is always scrypt, even a generated one.
      const inserted = await repo.insertClientIfMissing({
        client_id,
        secret_hash: await hashChosenSecret(client_secret),
        name: 'admin',
        company_id: null,
        scopes: [...ALL_SCOPE_STRINGS],
      })
      return inserted ? { client_id, client_secret } : undefined
    },

    /** A company client grants only scopes it holds itself (`grantorScopes`; null for a platform client). */
    async createCompanyClient(
      companyId: string,
      input: { name: string; scopes: string[] },
      grantorScopes: ReadonlySet<string> | null = null,
    ) {
      const authorized = await deps.companyScopes(companyId)
      if (!authorized) throw new NotFound('Company')
      const scopes = [...new Set(input.scopes)]
      const refused = scopes.find((s) => !authorized.includes(s))
      if (refused !== undefined)
        throw new ValidationError(`body/scopes holds ${refused}, which is not among the company's authorized scopes`)
      const notHeld = grantorScopes && scopes.find((s) => !grantorScopes.has(s))
      if (notHeld) throw new Forbidden(`The token may not grant ${notHeld}, which it does not hold itself`)
      const client_id = `company_${randomUUID()}`
      const client_secret = newSecret()
      await repo.insertClient({
        client_id,
        secret_hash: hashGeneratedSecret(client_secret),
        name: input.name,
        company_id: companyId,
        scopes,
      })
      return { client_id, client_secret, name: input.name, scopes }
    },

    async listCompanyClients(companyId: string, page: KeysetPage = {}): Promise<Paged<ClientView>> {
      if (!(await deps.companyScopes(companyId))) throw new NotFound('Company')
      const paged = await repo.listCompanyClients(companyId, page)
      return { ...paged, items: paged.items.map(clientView) }
    },

    async getCompanyClient(companyId: string, clientId: string): Promise<ClientView> {
      const client = await repo.findCompanyClient(companyId, clientId)
      if (!client) throw new NotFound('Client')
      return clientView(client)
    },

    async revokeCompanyClient(companyId: string, clientId: string) {
      if (!(await repo.revokeCompanyClient(companyId, clientId, clock.now()))) throw new NotFound('Client')
      await deps.access.changed(clientId)
    },
  }
}

export type OauthService = ReturnType<typeof createOauthService>

/** The scopes a company may grant under this status and plan, memoized by plan. */
const grantableCache = new Map<string, ReadonlySet<string>>()
function grantable(status: string | null, features: readonly string[] | null): ReadonlySet<string> {
  const live = liveFeatures(status, features)
  const key = live.join(' ')
  let set = grantableCache.get(key)
  if (!set) {
    set = new Set(scopeStrings(authorizedScopes(live)))
    if (grantableCache.size < 1000) grantableCache.set(key, set)
  }
  return set
}

function clientView(c: ClientRow): ClientView {
  return { client_id: c.client_id, name: c.name, scopes: c.scopes, created_at: c.created_at.toISOString() }
}

function newSecret(): string {
  return randomBytes(32).toString('base64url')
}
