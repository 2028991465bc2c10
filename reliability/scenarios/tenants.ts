import { createHmac, createPrivateKey, generateKeyPairSync, randomUUID, sign } from 'node:crypto'
import { checks, type Context, type Scenario } from '../lib/context.ts'
import { client, http, locationId } from '../lib/http.ts'
import { platformToken, tenant, tokenFor, type Tenant } from '../lib/fixtures.ts'
import { fillPath, isAnonymous, isPublic, routesOf, sampler, type Doc, type Ids, type Route } from '../lib/openapi.ts'
import { startServer, type Server, type Store } from '../lib/server.ts'

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url')

/**
 * 6. Every company-scoped route of /openapi.json: A's token on B's ids, A's path with B's child
 * ids, no token, a token without the scope, expired, `alg: none`, key confusion and foreign keys.
 * 0 leaks, and B's data (every GET of B) the same afterwards.
 */
export const tenants: Scenario = {
  id: 6,
  title: 'Tenant isolation and bad tokens',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const store = ctx.store()
    let server = await startServer(store)
    try {
      const platform = await platformToken(server.base)
      const admin = client(server.base, platform)
      const a = await tenant(server.base, admin, 2)
      const b = await tenant(server.base, admin, 2)
      const idsA = await seed(a, admin)
      const idsB = await seed(b, admin)
      // The signing key, read as an attacker with the database would not have it: only to mint an
      // expired token that is otherwise perfect.
      const key = await signingKey(ctx, store, server)
      if (key.restarted) server = key.restarted
      const doc = (await http(server.base, { url: '/openapi.json' })).json() as Doc
      const sample = sampler(doc)
      const routes = routesOf(doc).filter((r) => !isAnonymous(r.op) && !isPublic(r.op) && /\{/.test(r.path))
      const gets = routesOf(doc).filter((r) => r.method === 'GET' && r.path.includes('{company_id}') && !isPublic(r.op))
      const before = await snapshot(server, platform, gets, b, idsB, sample)

      const calendarOnly = await tokenFor(server.base, a.clientId, a.secret, 'read:calendar')
      const now = Math.floor(Date.now() / 1000)
      const claims = {
        iss: 'company-admin-api',
        aud: 'company-admin-api',
        sub: a.clientId,
        scope: fullScope(a.token),
        company_id: a.id,
        jti: randomUUID(),
      }
      const real = createPrivateKey({ key: key.privateJwk, format: 'jwk' })
      const edSign = (header: object, payload: object, k = real) => {
        const input = `${b64(header)}.${b64(payload)}`
        return `${input}.${sign(null, Buffer.from(input), k).toString('base64url')}`
      }
      const hsSign = (secret: string | Buffer, payload: object) => {
        const input = `${b64({ alg: 'HS256', kid: key.kid, typ: 'at+jwt' })}.${b64(payload)}`
        return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`
      }
      const attacker = generateKeyPairSync('ed25519')
      const attackerJwk = attacker.publicKey.export({ format: 'jwk' })
      const live = { ...claims, iat: now, exp: now + 3600 }
      const [head, body] = a.token.split('.')
      const bad: Record<string, string> = {
        'expired (real key)': edSign(
          { alg: 'EdDSA', kid: key.kid, typ: 'at+jwt' },
          { ...claims, iat: now - 7200, exp: now - 3600 },
        ),
        'alg none': `${b64({ alg: 'none', kid: key.kid, typ: 'at+jwt' })}.${b64(live)}.`,
        'alg none, no signature part': `${b64({ alg: 'none' })}.${b64(live)}`,
        'HS256 keyed with the public key (x)': hsSign(Buffer.from(String(key.publicJwk.x), 'base64url'), live),
        'HS256 keyed with the public JWK text': hsSign(JSON.stringify(key.publicJwk), live),
        'HS256 keyed with the JWKS text': hsSign(JSON.stringify({ keys: [key.publicJwk] }), live),
        "attacker's key under the real kid": edSign(
          { alg: 'EdDSA', kid: key.kid, typ: 'at+jwt' },
          live,
          attacker.privateKey,
        ),
        "attacker's key embedded (jwk header)": edSign(
          { alg: 'EdDSA', jwk: attackerJwk, typ: 'at+jwt' },
          live,
          attacker.privateKey,
        ),
        'other issuer (real key)': edSign(
          { alg: 'EdDSA', kid: key.kid, typ: 'at+jwt' },
          { ...live, iss: 'someone-else' },
        ),
        'other audience (real key)': edSign(
          { alg: 'EdDSA', kid: key.kid, typ: 'at+jwt' },
          { ...live, aud: 'someone-else' },
        ),
        // The service never issues these: made with a stolen key, they would outlive rotation.
        'issued an hour in the future (real key)': edSign(
          { alg: 'EdDSA', kid: key.kid, typ: 'at+jwt' },
          { ...claims, iat: now + 3600, exp: now + 3600 + 600 },
        ),
        'a lifetime of a year (real key)': edSign(
          { alg: 'EdDSA', kid: key.kid, typ: 'at+jwt' },
          { ...claims, iat: now - 60, exp: now + 365 * 86400 },
        ),
        "A's token with B's company_id": `${head}.${b64({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), company_id: b.id })}.${a.token.split('.')[2]}`,
        garbage: 'not.a.token',
      }

      let requests = 0
      const leaks: string[] = []
      const send = async (route: Route, url: string, token: string | undefined, ids: Ids) => {
        requests++
        const json = route.op.requestBody?.content['application/json']
        const query: string[] = []
        for (const p of route.op.parameters ?? [])
          if (p.in === 'query' && p.required)
            query.push(`${p.name}=${encodeURIComponent(String(sample(p.schema, p.name, ids)))}`)
        const payload = json ? sample(json.schema, '', ids) : undefined
        const res = await http(server.base, {
          method: route.method,
          url: url + (query.length ? `?${query.join('&')}` : ''),
          token,
          body: payload,
        })
        return Object.assign(res, { sent: `${url} ${JSON.stringify(payload ?? null)}` })
      }
      const bIds = [...idsB.values()]
      for (const route of routes) {
        const what = `${route.method} ${route.path}`
        const platformOnly = route.op['x-platform-only'] === true
        // A's token on B's path and ids.
        const cross = await send(route, fillPath(route.path, b.id, idsB).url, a.token, idsB)
        if (cross.status < 300 || bIds.some((id) => cross.text.includes(id)))
          leaks.push(`${what}: A's token on B's ids answered ${cross.status} ${cross.text.slice(0, 120)}`)
        c.check(
          cross.status === (platformOnly ? 403 : 404),
          `${what}: A's token on B's ids answered ${cross.status} (expected ${platformOnly ? 403 : 404})`,
        )
        // A's own path with B's child ids (only where the path or body names a child).
        const mixed = fillPath(route.path, a.id, idsB)
        const hasBody = route.op.requestBody !== undefined
        if (mixed.children > 0 || hasBody) {
          const res = await send(route, mixed.url, a.token, idsB)
          // Which of B's ids the request named: answering 2xx to those is a leak; naming them back in an error is an echo.
          const named = bIds.filter((id) => res.sent.includes(id) && id !== b.id)
          if (res.status < 300 && named.length > 0) leaks.push(`${what}: A's path with B's ids answered ${res.status}`)
          if (bIds.some((id) => res.text.includes(id) && !named.includes(id)))
            leaks.push(`${what}: A's path with B's ids shows B's data ${res.text.slice(0, 120)}`)
        }
        const own = fillPath(route.path, a.id, idsA).url
        const none = await send(route, own, undefined, idsA)
        c.check(none.status === 401, `${what} without a token: ${none.status}`)
        const scoped = await send(route, own, calendarOnly, idsA)
        c.check(scoped.status === 403, `${what} with a read:calendar token: ${scoped.status}`)
        for (const [name, token] of Object.entries(bad)) {
          const res = await send(route, own, token, idsA)
          c.check(res.status === 401, `${what} with ${name}: ${res.status} ${res.text.slice(0, 100)}`)
        }
      }
      const after = await snapshot(server, platform, gets, b, idsB, sample)
      const changed = Object.keys(before).filter((k) => before[k] !== after[k])
      c.check(leaks.length === 0, `leaks: ${leaks.slice(0, 8).join(' / ')}`)
      c.check(changed.length === 0, `B's data changed: ${changed.join(', ')}`)
      return {
        pass: c.pass,
        figures: {
          routes: routes.length,
          requests: requests,
          'bad token kinds': Object.keys(bad).length,
          leaks: leaks.length,
          "B's reads compared": Object.keys(before).length,
          changed: changed.length,
        },
        notes: c.notes.slice(0, 20),
      }
    } finally {
      await server.stop()
    }
  },
}

function fullScope(token: string): string {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).scope
}

/** A tenant's ids by resource: the fixtures' ones, a communication, a holiday, its subscription and customer. */
async function seed(t: Tenant, admin: ReturnType<typeof client>): Promise<Ids> {
  const ids: Ids = new Map([
    ['team', t.team],
    ['contract', t.contracts[0]!],
    ['subsidiary', t.subsidiary],
    ['client', t.clientId],
  ])
  const comm = await t.api.expect(202, {
    method: 'POST',
    url: `/api/v1/companies/${t.id}/communications`,
    body: { subject: 'tenant', message: 'm', send_at: '2099-01-01T09:00:00Z', destination_team_ids: [t.team] },
  })
  ids.set('communication', locationId(comm))
  const holiday = await t.api.call({
    method: 'POST',
    url: `/api/v1/companies/${t.id}/holidays`,
    body: { name: 'Patrono', day: '2099-06-24', is_worker_holiday: true, recurrent: 'none' },
  })
  if (holiday.status === 202) ids.set('holiday', locationId(holiday))
  const company = (await admin.expect(200, { url: `/api/v1/companies/${t.id}` })).json()
  if (company.subscription_id) ids.set('subscription', company.subscription_id)
  if (company.subscription_customer_id) ids.set('subscription_customer', company.subscription_customer_id)
  return ids
}

async function snapshot(
  server: Server,
  token: string,
  gets: Route[],
  t: Tenant,
  ids: Ids,
  sample: ReturnType<typeof sampler>,
) {
  const out: Record<string, string> = {}
  for (const route of gets) {
    const { url } = fillPath(route.path, t.id, ids)
    const query: string[] = []
    for (const p of route.op.parameters ?? [])
      if (p.in === 'query' && p.required)
        query.push(`${p.name}=${encodeURIComponent(String(sample(p.schema, p.name, ids)))}`)
    const res = await http(server.base, { url: url + (query.length ? `?${query.join('&')}` : ''), token })
    // Hosted pages and estimates are made anew at each call: their ids and expiries move.
    if (/manager_page|portal|payment_page|estimate/.test(route.path)) continue
    out[route.path] = `${res.status} ${res.text}`
  }
  return out
}

/** The service's signing key: from SQL on PostgreSQL; on PGlite the server is stopped to open its directory, then started again. */
async function signingKey(ctx: Context, store: Store, server: Server) {
  type Row = {
    kid: string
    private_jwk: Record<string, unknown> & { kid?: string }
    public_jwk: Record<string, unknown>
  }
  let row: Row
  let restarted: Server | undefined
  if (store.engine === 'postgres') {
    const dbName = store.url.split('/').pop()!
    row = JSON.parse(
      ctx.cluster.psql(
        `SELECT row_to_json(k) FROM (SELECT kid, private_jwk, public_jwk FROM signing_keys ORDER BY created_at, kid LIMIT 1) k`,
        dbName,
      ),
    )
  } else {
    await server.stop()
    const { PGlite } = await import('@electric-sql/pglite')
    const pg = new PGlite({ dataDir: `${store.dataDir}/pgdata` })
    const res = await pg.query<Row>(
      'SELECT kid, private_jwk, public_jwk FROM signing_keys ORDER BY created_at, kid LIMIT 1',
    )
    row = res.rows[0]!
    await pg.close()
    restarted = await startServer(store)
  }
  return {
    kid: row.kid,
    privateJwk: row.private_jwk as import('node:crypto').JsonWebKey,
    publicJwk: row.public_jwk,
    restarted,
  }
}
