import type { TestApp } from './app.ts'
import { locationId, uniq } from './app.ts'

/** Data factories that go through the HTTP API, as a client would. */

export async function plan(t: TestApp, fields: Record<string, unknown> = {}) {
  const body = {
    plan: {
      sku: uniq('plan'),
      name: 'Pro',
      price: 29.9,
      plan_family: 'core',
      period_unit: 'month',
      features: ['stamping'],
      ...fields,
    },
  }
  const res = await t.call({ method: 'POST', url: '/api/v1/subscription/plans', body })
  if (res.statusCode !== 202) throw new Error(`plan: ${res.statusCode} ${res.body}`)
  return { id: locationId(res), ...body.plan } as {
    id: string
    sku: string
    price: number
    features: string[]
  } & Record<string, unknown>
}

export async function product(t: TestApp, allowedPlans: string[], fields: Record<string, unknown> = {}) {
  const body = {
    product: {
      sku: uniq('product'),
      name: 'Workforce',
      visible: true,
      subscription_manager: 'local',
      allowed_plans: allowedPlans,
      ...fields,
    },
  }
  const res = await t.call({ method: 'POST', url: '/api/v1/subscription/products', body })
  if (res.statusCode !== 202) throw new Error(`product: ${res.statusCode} ${res.body}`)
  return { id: locationId(res), ...body.product } as { id: string; sku: string } & Record<string, unknown>
}

export interface CompanyFixture {
  id: string
  planSku: string
  productSku: string
  /** A company client's token holding every scope the company is authorized for. */
  token: string
  client: { client_id: string; client_secret: string }
}

/** A company on a fresh plan and product, with a company client holding all its scopes. */
export async function company(
  t: TestApp,
  fields: Record<string, unknown> = {},
  planFields: Record<string, unknown> = {},
): Promise<CompanyFixture> {
  const p = await plan(t, planFields)
  const pr = await product(t, [p.sku])
  const res = await t.call({
    method: 'POST',
    url: '/api/v1/companies',
    body: {
      name: uniq('Acme'),
      country: 'IT',
      timezone: 'Europe/Rome',
      product_sku: pr.sku,
      subscription_plan: p.sku,
      plan_quantity: 5,
      ...fields,
    },
  })
  if (res.statusCode !== 202) throw new Error(`company: ${res.statusCode} ${res.body}`)
  const id = locationId(res)
  const client = await companyClient(t, id)
  return {
    id,
    planSku: p.sku,
    productSku: pr.sku,
    client,
    token: await t.tokenFor(client.client_id, client.client_secret),
  }
}

/** A company client; by default with every scope the company is authorized for. */
export async function companyClient(t: TestApp, companyId: string, scopes?: string[]) {
  if (!scopes) {
    const authorized = await t.json<{ mode: string[]; api: string }[]>(200, {
      url: `/api/v1/companies/${companyId}/authorized/scopes`,
    })
    scopes = authorized.flatMap((s) => s.mode.map((m) => `${m}:${s.api}`))
  }
  const created = await t.json(201, {
    method: 'POST',
    url: `/api/v1/companies/${companyId}/clients`,
    body: { name: 'test client', scopes },
  })
  return { client_id: created.client_id as string, client_secret: created.client_secret as string }
}

export async function subsidiary(t: TestApp, companyId: string, fields: Record<string, unknown> = {}) {
  const res = await t.call({
    method: 'POST',
    url: `/api/v1/companies/${companyId}/subsidiaries`,
    body: { name: uniq('Branch'), city: 'Milano', country: 'IT', ...fields },
  })
  if (res.statusCode !== 202) throw new Error(`subsidiary: ${res.statusCode} ${res.body}`)
  return locationId(res)
}

export async function contract(t: TestApp, companyId: string, fields: Record<string, unknown> = {}) {
  const res = await t.call({
    method: 'POST',
    url: `/api/v1/companies/${companyId}/contracts`,
    body: { first_name: 'Mario', last_name: uniq('Rossi'), email: 'mario@example.com', ...fields },
  })
  if (res.statusCode !== 202) throw new Error(`contract: ${res.statusCode} ${res.body}`)
  return locationId(res)
}

/** A team (spec endpoint 18); leaders must be contracts of the company. */
export async function team(t: TestApp, companyId: string, fields: Record<string, unknown> = {}, token?: string) {
  const res = await t.call({
    method: 'POST',
    url: `/api/v1/companies/${companyId}/teams`,
    token,
    body: { name: uniq('Team'), code: uniq('T'), team_leader_ids: [], ...fields },
  })
  if (res.statusCode !== 202) throw new Error(`team: ${res.statusCode} ${res.body}`)
  return locationId(res)
}

/** Endpoint 35: the contract joins every listed team. */
export async function addToTeams(t: TestApp, companyId: string, contractId: string, teamIds: string[], token?: string) {
  const res = await t.call({
    method: 'PUT',
    url: `/api/v1/companies/${companyId}/teams/add_contract`,
    token,
    body: { contract_id: contractId, team_ids: teamIds },
  })
  if (res.statusCode !== 202) throw new Error(`add_contract: ${res.statusCode} ${res.body}`)
}
