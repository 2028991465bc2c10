/**
 * The typed client at work: a plan and a product, a company on them, a client of the company,
 * a team made with that client's token, then both read back.
 *
 *   BASE_URL=http://localhost:8080 CLIENT_ID=... CLIENT_SECRET=... node --import tsx clients/typescript/example.ts
 *
 * CLIENT_ID/CLIENT_SECRET: a platform client (ADMIN_CLIENT_ID/ADMIN_CLIENT_SECRET of the server,
 * or the credentials it printed at its first start). Catalogue skus get a random suffix, so the
 * example runs again on the same database.
 */
import { randomBytes } from 'node:crypto'
import { createClient, createdId, getToken, type Company, type Team } from './index.ts'

const baseUrl = process.env.BASE_URL ?? 'http://localhost:8080'
const clientId = process.env.CLIENT_ID
const clientSecret = process.env.CLIENT_SECRET
if (!clientId || !clientSecret) throw new Error("Set CLIENT_ID and CLIENT_SECRET to a platform client's credentials")

/** The data of a 2xx answer, or an Error naming what failed. */
function ok<T>(what: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok)
    throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`)
  return result.data as T
}

export async function runExample(): Promise<{ company: Company; team: Team }> {
  const platform = createClient({ baseUrl, token: await getToken(baseUrl, clientId!, clientSecret!) })
  const suffix = randomBytes(4).toString('hex')

  const plan = await platform.POST('/api/v1/subscription/plans', {
    body: {
      plan: {
        sku: `pro-monthly-${suffix}`,
        name: 'Pro',
        price: 29.9,
        plan_family: 'core',
        period_unit: 'month',
        features: ['stamping'],
      },
    },
  })
  ok('create the plan', plan)
  ok(
    'create the product',
    await platform.POST('/api/v1/subscription/products', {
      body: { product: { sku: `workforce-${suffix}`, name: 'Workforce', allowed_plans: [`pro-monthly-${suffix}`] } },
    }),
  )

  const created = await platform.POST('/api/v1/companies', {
    body: {
      name: 'Acme Srl',
      country: 'IT',
      product_sku: `workforce-${suffix}`,
      subscription_plan: `pro-monthly-${suffix}`,
    },
  })
  ok('create the company', created)
  const company_id = createdId(created.response)

  const hrApp = ok(
    'create a company client',
    await platform.POST('/api/v1/companies/{company_id}/clients', {
      params: { path: { company_id } },
      body: { name: 'hr app', scopes: ['read:team', 'write:team'] },
    }),
  )
  // The secret is in this answer only: null in an Idempotency-Key replay (this request sends no key).
  if (hrApp.client_secret === null) throw new Error('create a company client: the answer shows no client_secret')
  // The company's own client: its token sees this company only.
  const hr = createClient({ baseUrl, token: await getToken(baseUrl, hrApp.client_id, hrApp.client_secret) })

  const teamCreated = await hr.POST('/api/v1/companies/{company_id}/teams', {
    params: { path: { company_id } },
    body: { name: 'Warehouse', code: 'WH' },
  })
  ok('create the team', teamCreated)
  const team_id = createdId(teamCreated.response)

  const company = ok(
    'read the company',
    await platform.GET('/api/v1/companies/{company_id}', { params: { path: { company_id } } }),
  )
  const team = ok(
    'read the team',
    await hr.GET('/api/v1/companies/{company_id}/teams/{team_id}', { params: { path: { company_id, team_id } } }),
  )
  return { company, team }
}

const { company, team } = await runExample()
process.stdout.write(
  `${JSON.stringify({ company: { id: company.id, name: company.name, subscription_status: company.subscription_status }, team: { id: team.id, name: team.name, code: team.code } })}\n`,
)
