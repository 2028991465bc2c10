/**
 * A program that uses the client as its users do: installed as `@company-admin/client` into
 * node_modules, imported by name, type-checked with its own tsconfig. test/client-package.test.ts
 * copies this folder next to the packed package, runs tsc on it, then calls `session`.
 */
import { createClient, createdId, getToken, type ApiError, type Company, type Schemas } from '@company-admin/client'

/** True when the field may be left out of the body. */
// biome-ignore lint/complexity/noBannedTypes: `{}` is the empty object type this test compares with
type Optional<T, K extends keyof T> = {} extends Pick<T, K> ? true : false

// Fields the API fills with a default when they are left out stay optional in request bodies.
export const defaultedFieldsAreOptional: [
  Optional<Schemas['CompanyInput'], 'plan_quantity'>,
  Optional<Schemas['ContractInput'], 'active'>,
  Optional<Schemas['HolidayInput'], 'is_worker_holiday'>,
  Optional<Schemas['HolidayInput'], 'recurrent'>,
  Optional<Schemas['ProductInput']['product'], 'visible'>,
] = [true, true, true, true, true]

export interface Session {
  company: Company
  productVisible: boolean
  missing: { status: number; error: ApiError | undefined }
}

export async function session(
  baseUrl: string,
  clientId: string,
  clientSecret: string,
  suffix: string,
): Promise<Session> {
  const platform = createClient({ baseUrl, token: await getToken(baseUrl, clientId, clientSecret) })

  const plan = await platform.POST('/api/v1/subscription/plans', {
    body: {
      plan: {
        sku: `pro-${suffix}`,
        name: 'Pro',
        price: 29.9,
        plan_family: 'core',
        period_unit: 'month',
        features: ['stamping'],
      },
    },
  })
  if (!plan.response.ok) throw new Error(`create the plan: ${plan.response.status} ${JSON.stringify(plan.error)}`)
  // `visible` left out: the API makes the product visible.
  const product = await platform.POST('/api/v1/subscription/products', {
    body: { product: { sku: `workforce-${suffix}`, name: 'Workforce', allowed_plans: [`pro-${suffix}`] } },
  })
  if (!product.response.ok)
    throw new Error(`create the product: ${product.response.status} ${JSON.stringify(product.error)}`)
  const read = await platform.GET('/api/v1/subscription/products/{id}', {
    params: { path: { id: createdId(product.response) } },
  })
  if (!read.data) throw new Error(`read the product: ${read.response.status} ${JSON.stringify(read.error)}`)

  // `plan_quantity` left out: the API subscribes one.
  const created = await platform.POST('/api/v1/companies', {
    body: { name: 'Acme Srl', country: 'IT', product_sku: `workforce-${suffix}`, subscription_plan: `pro-${suffix}` },
  })
  if (!created.response.ok)
    throw new Error(`create the company: ${created.response.status} ${JSON.stringify(created.error)}`)
  const company_id = createdId(created.response)
  const company = await platform.GET('/api/v1/companies/{company_id}', { params: { path: { company_id } } })
  if (!company.data) throw new Error(`read the company: ${company.response.status} ${JSON.stringify(company.error)}`)

  const missing = await platform.GET('/api/v1/companies/{company_id}', {
    params: { path: { company_id: '00000000-0000-4000-8000-000000000000' } },
  })
  const error: ApiError | undefined = missing.error
  return {
    company: company.data,
    productVisible: read.data.product.visible,
    missing: { status: missing.response.status, error },
  }
}

// The types refuse what the API refuses: these lines would compile if they were not checked.
export async function refused(baseUrl: string) {
  const client = createClient({ baseUrl })
  // @ts-expect-error name is a string
  await client.POST('/api/v1/companies', { body: { name: 123, country: 'IT' } })
  // @ts-expect-error no such path
  await client.GET('/api/v1/nowhere')
}
