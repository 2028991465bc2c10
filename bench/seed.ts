import { randomUUID } from 'node:crypto'

// What the benchmarks read and write: small data through the API as a client would, bulk volumes
// with set-based SQL (generate_series), since the API would take longer than the benchmarks.

export const ADMIN = { client_id: 'bench-admin', client_secret: 'bench-admin-secret-0123456789' }

export interface Seeded {
  /** The company that is read: 20 teams of 2 leaders each, 40 contracts, holidays. */
  reader: { id: string; token: string; client_id: string; client_secret: string }
  /** The company that POST .../teams writes into (so the read stays 20 teams). */
  writer: { id: string; token: string; leaders: string[] }
}

async function call(base: string, method: string, url: string, token: string | undefined, body?: unknown) {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  })
  const text = await res.text()
  return { status: res.status, location: res.headers.get('location') ?? '', body: text ? JSON.parse(text) : undefined }
}

async function expect(
  base: string,
  status: number,
  method: string,
  url: string,
  token: string | undefined,
  body?: unknown,
) {
  const res = await call(base, method, url, token, body)
  if (res.status !== status)
    throw new Error(`${method} ${url}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`)
  return res
}

const lastSegment = (location: string) => location.slice(location.lastIndexOf('/') + 1)

export async function token(base: string, clientId: string, secret: string): Promise<string> {
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
  })
  if (res.status !== 200) throw new Error(`token: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { access_token: string }).access_token
}

const SCOPES = [
  'read:company',
  'read:team',
  'write:team',
  'read:holiday',
  'write:holiday',
  'read:contract',
  'write:contract',
  'read:company_communication',
  'write:company_communication',
  'read:company_communication_message',
]

export async function newCompany(base: string, admin: string, productSku: string, planSku: string, name: string) {
  const created = await expect(base, 202, 'POST', '/api/v1/companies', admin, {
    name,
    country: 'IT',
    province: 'MI',
    city: 'Milano',
    timezone: 'Europe/Rome',
    vat: 'IT01234567890',
    billing_email: 'billing@example.com',
    product_sku: productSku,
    subscription_plan: planSku,
    plan_quantity: 40,
  })
  const id = lastSegment(created.location)
  const client = (
    await expect(base, 201, 'POST', `/api/v1/companies/${id}/clients`, admin, { name: 'bench', scopes: SCOPES })
  ).body as { client_id: string; client_secret: string }
  return { id, ...client, token: await token(base, client.client_id, client.client_secret) }
}

async function contracts(
  base: string,
  tokenValue: string,
  companyId: string,
  count: number,
  subsidiaryId?: string,
): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const res = await expect(base, 202, 'POST', `/api/v1/companies/${companyId}/contracts`, tokenValue, {
      first_name: 'Worker',
      last_name: `N${String(i).padStart(3, '0')}`,
      email: `w${i}@example.com`,
      ...(subsidiaryId ? { subsidiary_id: subsidiaryId } : {}),
    })
    ids.push(lastSegment(res.location))
  }
  return ids
}

/** The API part: a plan and product, the reader company (20 teams x 2 leaders, holidays) and the writer company. */
/** A plan and a product that companies are created with; and the platform client's token. */
export async function newCatalogue(base: string) {
  const admin = await token(base, ADMIN.client_id, ADMIN.client_secret)
  const planSku = `bench-plan-${randomUUID().slice(0, 8)}`
  const productSku = `bench-product-${randomUUID().slice(0, 8)}`
  await expect(base, 202, 'POST', '/api/v1/subscription/plans', admin, {
    plan: {
      sku: planSku,
      name: 'Bench',
      price: 29.9,
      plan_family: 'core',
      period_unit: 'month',
      features: ['stamping', 'expense'],
    },
  })
  await expect(base, 202, 'POST', '/api/v1/subscription/products', admin, {
    product: { sku: productSku, name: 'Bench', visible: true, subscription_manager: 'local', allowed_plans: [planSku] },
  })
  return { admin, planSku, productSku }
}

export async function seedThroughApi(base: string): Promise<Seeded> {
  const { admin, planSku, productSku } = await newCatalogue(base)

  const reader = await newCompany(base, admin, productSku, planSku, 'Bench Reader S.p.A.')
  const subsidiary = lastSegment(
    (
      await expect(base, 202, 'POST', `/api/v1/companies/${reader.id}/subsidiaries`, admin, {
        name: 'Torino',
        city: 'Torino',
        country: 'IT',
      })
    ).location,
  )
  const people = await contracts(base, reader.token, reader.id, 40, subsidiary)
  for (let i = 0; i < 20; i++) {
    await expect(base, 202, 'POST', `/api/v1/companies/${reader.id}/teams`, reader.token, {
      name: `Team ${String(i).padStart(2, '0')}`,
      code: `T${i}`,
      subsidiary_id: subsidiary,
      team_leader_ids: [people[2 * i]!, people[2 * i + 1]!],
    })
  }
  // Holidays: company-wide dated and yearly ones, and the subsidiary's; the public ones are Italy's (and Milan's).
  for (let i = 0; i < 8; i++) {
    await expect(base, 202, 'POST', `/api/v1/companies/${reader.id}/holidays`, reader.token, {
      name: `Closure ${i}`,
      day: `2026-0${1 + (i % 9)}-1${i}`,
      recurrent: i % 2 === 0 ? 'yearly' : 'none',
    })
  }
  for (let i = 0; i < 4; i++) {
    await expect(base, 202, 'POST', `/api/v1/companies/${reader.id}/holidays`, reader.token, {
      name: `Patron ${i}`,
      day: `2025-0${2 + i}-2${i}`,
      recurrent: 'yearly',
      subsidiary_id: subsidiary,
    })
  }

  const writer = await newCompany(base, admin, productSku, planSku, 'Bench Writer S.r.l.')
  const leaders = await contracts(base, writer.token, writer.id, 2)
  return { reader, writer: { id: writer.id, token: writer.token, leaders } }
}

/** Runs SQL on the bench database (node-postgres, or PGlite opened by the harness while the server is stopped). */
export type Sql = (text: string) => Promise<unknown>

/**
 * Adds companies until `total` are stored, each with 2 contracts and 2 teams that both lead,
 * in one set-based statement per batch (the RI triggers check at the end of each statement).
 */
export async function growCompanies(exec: Sql, count: (text: string) => Promise<number>, total: number) {
  let stored = await count('SELECT count(*)::int AS n FROM companies')
  while (stored < total) {
    const batch = Math.min(20_000, total - stored)
    await exec(`
      WITH new AS (
        INSERT INTO companies (id, name, country, timezone)
        SELECT gen_random_uuid(), 'Bulk ' || (${stored} + g), 'IT', 'Europe/Rome' FROM generate_series(1, ${batch}) g
        RETURNING id
      ), k AS (
        INSERT INTO contracts (company_id, id, first_name, last_name)
        SELECT new.id, gen_random_uuid(), 'Bulk', 'Worker ' || i FROM new, generate_series(1, 2) i
        RETURNING company_id, id
      ), t AS (
        INSERT INTO teams (company_id, id, name, code)
        SELECT new.id, gen_random_uuid(), 'Team ' || i, 'T' || i FROM new, generate_series(1, 2) i
        RETURNING company_id, id
      )
      INSERT INTO team_members (company_id, team_id, contract_id, is_leader)
      SELECT t.company_id, t.id, k.id, true FROM t JOIN k ON k.company_id = t.company_id`)
    stored += batch
  }
  await exec('ANALYZE')
}
