import { randomUUID } from 'node:crypto'
import { client, http, locationId, type Client } from './http.ts'
import { ADMIN } from './server.ts'

export const uniq = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`

export async function tokenFor(base: string, clientId: string, secret: string, scope?: string): Promise<string> {
  const res = await http(base, {
    method: 'POST',
    url: '/oauth/token',
    body: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret, ...(scope ? { scope } : {}) },
  })
  if (res.status !== 200) throw new Error(`token for ${clientId}: ${res.status} ${res.text}`)
  return res.json().access_token as string
}

export const platformToken = (base: string) => tokenFor(base, ADMIN.id, ADMIN.secret)

export interface Tenant {
  id: string
  token: string
  /** The company client's credentials (to mint more tokens, with fewer scopes). */
  clientId: string
  secret: string
  subsidiary: string
  contracts: string[]
  team: string
  api: Client
}

/** A company made through the API, as an operator makes one: plan, product, company, a client with all its scopes. */
export async function tenant(base: string, admin: Client, contracts = 3): Promise<Tenant> {
  const planSku = uniq('plan')
  await admin.expect(202, {
    method: 'POST',
    url: '/api/v1/subscription/plans',
    body: {
      plan: {
        sku: planSku,
        name: 'Pro',
        price: 29.9,
        plan_family: 'core',
        period_unit: 'month',
        features: ['stamping'],
      },
    },
  })
  const productSku = uniq('product')
  await admin.expect(202, {
    method: 'POST',
    url: '/api/v1/subscription/products',
    body: {
      product: {
        sku: productSku,
        name: 'Workforce',
        visible: true,
        subscription_manager: 'local',
        allowed_plans: [planSku],
      },
    },
  })
  const created = await admin.expect(202, {
    method: 'POST',
    url: '/api/v1/companies',
    body: {
      name: uniq('Acme'),
      country: 'IT',
      timezone: 'Europe/Rome',
      product_sku: productSku,
      subscription_plan: planSku,
      plan_quantity: 5,
    },
  })
  const id = locationId(created)
  const scopes = (await admin.expect(200, { url: `/api/v1/companies/${id}/authorized/scopes` })).json() as Array<{
    mode: string[]
    api: string
  }>
  const made = (
    await admin.expect(201, {
      method: 'POST',
      url: `/api/v1/companies/${id}/clients`,
      body: { name: 'reliability', scopes: scopes.flatMap((s) => s.mode.map((m) => `${m}:${s.api}`)) },
    })
  ).json()
  const token = await tokenFor(base, made.client_id, made.client_secret)
  const api = client(base, token)
  const subsidiary = locationId(
    await api.expect(202, {
      method: 'POST',
      url: `/api/v1/companies/${id}/subsidiaries`,
      body: { name: uniq('Branch'), city: 'Milano', country: 'IT' },
    }),
  )
  const ids: string[] = []
  for (let i = 0; i < contracts; i++) {
    ids.push(
      locationId(
        await api.expect(202, {
          method: 'POST',
          url: `/api/v1/companies/${id}/contracts`,
          body: {
            first_name: 'Mario',
            last_name: uniq('Rossi'),
            email: 'mario@example.com',
            subsidiary_id: subsidiary,
          },
        }),
      ),
    )
  }
  const team = locationId(
    await api.expect(202, {
      method: 'POST',
      url: `/api/v1/companies/${id}/teams`,
      body: { name: uniq('Team'), code: uniq('T'), team_leader_ids: ids.slice(0, 1) },
    }),
  )
  return { id, token, clientId: made.client_id, secret: made.client_secret, subsidiary, contracts: ids, team, api }
}

export function teamBody(code: string) {
  return { name: `Team ${code}`, code }
}

export function communicationBody(subject: string, teamId: string) {
  // Far in the future: the load measures writes, not deliveries.
  return {
    subject,
    message: 'Reliability load',
    send_at: '2099-01-01T09:00:00Z',
    status: 'scheduled',
    destination_team_ids: [teamId],
  }
}
