import net from 'node:net'
import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { checks, fmt, median, type Scenario } from '../lib/context.ts'
import { client, http, locationId, type Request } from '../lib/http.ts'
import { communicationBody, platformToken, tenant } from '../lib/fixtures.ts'
import { judgeError } from '../lib/load.ts'
import {
  fillPath,
  isAnonymous,
  resolver,
  routesOf,
  sampler,
  type Doc,
  type Ids,
  type Route,
  type Schema,
} from '../lib/openapi.ts'
import { rssOf, sleep, startServer } from '../lib/server.ts'

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => void
const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']

/** Deterministic randomness, so a failure can be run again (RELIABILITY_SEED). */
function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Attempt {
  what: string
  req: Request
  route?: Route
  rawBytes?: Buffer
}

/**
 * 5. At least 10,000 requests generated from /openapi.json, valid then mutated: no 5xx, every error
 * `{errors, code}`, every 2xx valid against its schema, bounded memory growth.
 */
export const hostile: Scenario = {
  id: 5,
  title: 'Hostile input from /openapi.json',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const server = await startServer(ctx.store(), { LOG_LEVEL: 'error' })
    try {
      const platform = await platformToken(server.base)
      const admin = client(server.base, platform)
      const t = await tenant(server.base, admin, 2)
      const company = (await admin.expect(200, { url: `/api/v1/companies/${t.id}` })).json()
      const comm = locationId(
        await t.api.expect(202, {
          method: 'POST',
          url: `/api/v1/companies/${t.id}/communications`,
          body: communicationBody('s', t.team),
        }),
      )
      // No client id: a generated DELETE would revoke the tenant's own client.
      const ids: Ids = new Map([
        ['team', t.team],
        ['contract', t.contracts[0]!],
        ['subsidiary', t.subsidiary],
        ['communication', comm],
        ['subscription', company.subscription_id],
        ['subscription_customer', company.subscription_customer_id],
      ])
      const doc = (await http(server.base, { url: '/openapi.json' })).json() as Doc
      const resolve = resolver(doc)
      const sample = sampler(doc)
      const ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true })
      addFormats(ajv)
      ajv.addSchema({ ...doc, $id: 'doc' } as object)
      const validators = new Map<string, ReturnType<typeof ajv.compile> | null>()
      const validatorOf = (route: Route, status: number) => {
        const key = `${route.method} ${route.path} ${status}`
        if (!validators.has(key)) {
          const content = route.op.responses?.[String(status)]?.content?.['application/json']
          const pointer = `doc#/paths/${route.path.replace(/~/g, '~0').replace(/\//g, '~1')}/${route.method.toLowerCase()}/responses/${status}/content/application~1json/schema`
          validators.set(key, content ? ajv.compile({ $ref: pointer }) : null)
        }
        return validators.get(key)
      }

      const total = ctx.scaled(10_000, 500)
      const random = rng(Number(process.env.RELIABILITY_SEED ?? 7))
      const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!
      // Disabling the tenant would make every later company request a 403: it is sent once at the end.
      const disabling = (r: { method: string; path: string }) =>
        r.method === 'PUT' && r.path === '/api/v1/companies/{company_id}'
      const routes = routesOf(doc).filter((r) => !disabling(r))
      const tokenFor = (route: Route) =>
        isAnonymous(route.op) ? undefined : route.path.includes('{company_id') && random() < 0.5 ? t.token : platform

      const queryOf = (route: Route, over: Record<string, string> = {}) => {
        const q: string[] = []
        for (const p of route.op.parameters ?? [])
          if (p.in === 'query' && (p.required || random() < 0.3))
            q.push(`${p.name}=${encodeURIComponent(String(sample(p.schema, p.name, ids)))}`)
        for (const [k, v] of Object.entries(over)) q.push(`${k}=${v}`)
        return q.length ? `?${q.join('&')}` : ''
      }
      const bodySchema = (route: Route) => resolve(route.op.requestBody?.content['application/json']?.schema)
      function valid(route: Route): Attempt {
        const schema = bodySchema(route)
        return {
          what: 'valid',
          route,
          req: {
            method: route.method,
            url: fillPath(route.path, t.id, ids).url + queryOf(route),
            token: tokenFor(route),
            body: schema ? sample(schema, '', ids) : undefined,
          },
        }
      }
      function fieldsOf(schema: Schema | undefined): Array<[string, Schema]> {
        return Object.entries(resolve(schema)?.properties ?? {}).map(([k, v]) => [k, resolve(v)!])
      }
      const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`
      const wrong = (s: Schema): unknown[] =>
        [123, 'x', true, null, [], {}, -1.5, 1e308, '', [1, 'a', null]].filter(
          (v) => typeof v !== (s.type === 'integer' ? 'number' : s.type),
        )
      const mutations: Array<(route: Route) => Attempt> = [
        valid,
        (route) => {
          const a = valid(route)
          const body = a.req.body as Record<string, unknown> | undefined
          const req = bodySchema(route)?.required ?? []
          if (body && req.length) delete body[pick(req)]
          return { ...a, what: 'missing field' }
        },
        (route) => {
          const a = valid(route)
          const f = fieldsOf(bodySchema(route))
          if (f.length && a.req.body && typeof a.req.body === 'object') {
            const [k, s] = pick(f)
            ;(a.req.body as Record<string, unknown>)[k] = pick(wrong(s))
          }
          return { ...a, what: 'wrong type' }
        },
        (route) => {
          const a = valid(route)
          const f = fieldsOf(bodySchema(route))
          if (f.length && a.req.body)
            (a.req.body as Record<string, unknown>)[pick(f)[0]] = 'x'.repeat(pick([300, 70_000, 900_000]))
          return { ...a, what: 'huge string' }
        },
        (route) => {
          const a = valid(route)
          const f = fieldsOf(bodySchema(route))
          if (f.length && a.req.body)
            (a.req.body as Record<string, unknown>)[pick(f)[0]] = Array.from(
              { length: pick([1001, 20_000]) },
              (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
            )
          return { ...a, what: 'huge array' }
        },
        (route) => ({
          ...valid(route),
          what: 'deep nesting',
          req: {
            ...valid(route).req,
            raw: deep(pick([100, 2000, 10_000, 100_000])),
            headers: { 'content-type': 'application/json' },
          },
        }),
        (route) => {
          const a = valid(route)
          const body = JSON.stringify(a.req.body ?? {}).replace(
            /^\{/,
            '{"__proto__":{"polluted":true,"isAdmin":true},"constructor":{"prototype":{"polluted":true}},',
          )
          return {
            ...a,
            what: '__proto__',
            req: { ...a.req, raw: body.replace(/,}$/, '}'), headers: { 'content-type': 'application/json' } },
          }
        },
        (route) => {
          const a = valid(route)
          const f = fieldsOf(bodySchema(route)).filter(([, s]) => s.type === 'string')
          if (f.length && a.req.body) (a.req.body as Record<string, unknown>)[pick(f)[0]] = `a\u0000b\ud800`
          return { ...a, what: 'NUL and lone surrogate' }
        },
        (route) => {
          const a = valid(route)
          const text = JSON.stringify(a.req.body ?? { name: 'x' })
          return {
            ...a,
            what: 'broken UTF-8',
            req: {
              ...a.req,
              raw: Buffer.concat([
                Buffer.from(text.slice(0, -2)),
                Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82]),
                Buffer.from(text.slice(-2)),
              ]),
              headers: { 'content-type': 'application/json' },
            },
          }
        },
        (route) => {
          const a = valid(route)
          return {
            ...a,
            what: 'bad percent-encoding',
            req: {
              ...a.req,
              url:
                a.req.url.replace(
                  /\/([^/?]+)(\/?)(\?|$)/,
                  `/$1${pick(['%', '%zz', '%E0%A4%A', '%C0%AF', '%00', '%2e%2e%2f'])}$2$3`,
                ) + pick(['', '?page=%zz', '?x=%']),
            },
          }
        },
        (route) => {
          const a = valid(route)
          return {
            ...a,
            what: 'query junk',
            req: {
              ...a.req,
              url:
                a.req.url.split('?')[0] +
                queryOf(
                  route,
                  Object.fromEntries(
                    (route.op.parameters ?? [])
                      .filter((p) => p.in === 'query')
                      .map((p) => [
                        p.name,
                        pick(['-1', 'abc', '1e99', '%FF', 'true', '[]', 'x'.repeat(5000), '9'.repeat(40)]),
                      ]),
                  ),
                ),
            },
          }
        },
        (route) => {
          const a = valid(route)
          return {
            ...a,
            what: 'bad path id',
            req: {
              ...a.req,
              url: route.path.replace(/\{[^}]+\}/g, () =>
                pick([
                  'x',
                  '..',
                  '%2e%2e',
                  '00000000-0000-0000-0000-000000000000',
                  'é',
                  '1'.repeat(199),
                  "' OR 1=1 --",
                  '%00',
                ]),
              ),
            },
          }
        },
        (route) => {
          const a = valid(route)
          return {
            ...a,
            what: 'huge header',
            req: { ...a.req, headers: { ...a.req.headers, 'x-junk': 'a'.repeat(pick([8_000, 20_000, 70_000])) } },
          }
        },
        (route) => {
          const a = valid(route)
          return { ...a, what: 'other method', req: { ...a.req, method: pick(METHODS) } }
        },
        (route) => {
          const a = valid(route)
          return {
            ...a,
            what: 'bad token',
            req: {
              ...a.req,
              token: undefined,
              headers: {
                authorization: pick([
                  'Bearer',
                  'Bearer ',
                  'Basic Zm9vOmJhcg==',
                  `Bearer ${t.token.slice(0, -3)}`,
                  `Bearer ${'a'.repeat(8000)}`,
                  'Bearer a.b.c',
                  `Bearer ${t.token}x`,
                  `bearer  ${platform}`,
                  'Bearer \u00ff',
                ]),
              },
            },
          }
        },
        (route) => {
          const a = valid(route)
          return {
            ...a,
            what: 'content type',
            req: {
              ...a.req,
              raw: pick(['', 'null', '[]', '"x"', '{', '\ufeff{}', 'a=b&c=d', '--x\r\n\r\n']),
              headers: {
                'content-type': pick([
                  'text/plain',
                  'application/json',
                  'application/x-www-form-urlencoded',
                  'multipart/form-data; boundary=x',
                  'application/json; charset=latin1',
                ]),
              },
            },
          }
        },
      ]

      const statuses = new Map<number, number>()
      const kinds = new Map<string, number>()
      const failures: string[] = []
      let done = 0
      let validOk = 0
      // A single sample at the end measures whatever the last requests allocated, so growth is a
      // median late in the run against a median early in it.
      const samples: Array<{ at: number; rss: number }> = []
      const attempts: Attempt[] = []
      for (const path of new Set(routes.map((r) => r.path)))
        for (const method of METHODS) {
          if (disabling({ method, path })) continue
          const route =
            routes.find((r) => r.path === path && r.method === method) ?? routes.find((r) => r.path === path)!
          attempts.push({ ...valid(route), what: 'every method', req: { ...valid(route).req, method } })
        }
      while (attempts.length < total) attempts.push(pick(mutations)(pick(routes)))
      const disable = routesOf(doc).find(disabling)
      if (disable) attempts.push(valid(disable))

      const judge = (a: Attempt, status: number, headers: Record<string, unknown>, text: string) => {
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
        kinds.set(a.what, (kinds.get(a.what) ?? 0) + 1)
        const where = `${a.what}: ${a.req.method} ${a.req.url.slice(0, 120)}`
        if (status >= 500) {
          failures.push(`${where} → ${status} ${text.slice(0, 200)}`)
          return
        }
        if (status >= 400 && a.req.method !== 'HEAD') {
          // The database's refusal of a value (SQLSTATE 22) names no field: validation let it through.
          if (text.includes('A value is out of range or malformed')) {
            failures.push(`${where} → ${status} the database refused a value validation let through (no field named)`)
            return
          }
          const problem = judgeError(status, headers['retry-after'], text)
          if (problem) failures.push(`${where} → ${problem}`)
          return
        }
        if (a.what === 'valid' && status < 300) validOk++
        if (
          status >= 200 &&
          status < 300 &&
          a.route &&
          a.req.method === a.route.method &&
          /json/.test(String(headers['content-type'] ?? '')) &&
          text
        ) {
          const validate = validatorOf(a.route, status)
          if (validate === null) failures.push(`${where} → ${status} with a JSON body the document does not describe`)
          else if (validate && !validate(JSON.parse(text)))
            failures.push(
              `${where} → ${status} body not valid against its schema: ${ajv.errorsText(validate.errors).slice(0, 200)}`,
            )
        }
      }
      let next = 0
      const worker = async () => {
        while (next < attempts.length) {
          const a = attempts[next++]!
          try {
            const res = await http(server.base, { ...a.req, timeoutMs: 30_000 })
            judge(a, res.status, res.headers, res.text)
          } catch (err) {
            // Node's client refuses some headers before sending: not the server's doing.
            if (
              (err as NodeJS.ErrnoException).code === 'ERR_INVALID_CHAR' ||
              (err as NodeJS.ErrnoException).code === 'ERR_INVALID_HTTP_TOKEN'
            )
              continue
            const again = await rawSend(server.port, a).catch((e: Error) => `no answer (${e.message})`)
            const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(again)?.[1] ?? 0)
            if (status === 0)
              failures.push(`${a.what}: ${a.req.method} ${a.req.url.slice(0, 100)} → ${again.slice(0, 120)}`)
            else
              judge(
                a,
                status,
                Object.fromEntries(
                  again
                    .split('\r\n\r\n')[0]!
                    .split('\r\n')
                    .slice(1)
                    .map((l) => [l.split(':')[0]!.toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
                ),
                again.split('\r\n\r\n').slice(1).join('\r\n\r\n'),
              )
          }
          done++
          if (done % 100 === 0) samples.push({ at: done, rss: rssOf(server.pid) })
        }
      }
      await Promise.all(Array.from({ length: 8 }, worker))
      await sleep(500)
      samples.push({ at: done, rss: rssOf(server.pid) })
      const warmRss = median(samples.filter((x) => x.at >= done * 0.1 && x.at <= done * 0.3).map((x) => x.rss)) ?? 0
      const endRss = median(samples.filter((x) => x.at >= done * 0.8).map((x) => x.rss)) ?? 0
      const peak = Math.max(...samples.map((x) => x.rss))
      const growth = (endRss - warmRss) / 1024 / 1024
      c.check(
        failures.length === 0,
        `${failures.length} answers broke the rules; first: ${failures.slice(0, 10).join(' | ')}`,
      )
      c.check(
        growth < 50,
        `memory grew ${growth.toFixed(1)} MB after warm-up (median RSS of the last fifth against 10-30 %)`,
      )
      c.check(server.child.exitCode === null, 'the service died')
      return {
        pass: c.pass,
        figures: {
          requests: done,
          statuses: fmt(statuses),
          'broken rules': failures.length,
          'valid requests answered 2xx': `${validOk}/${kinds.get('valid') ?? 0}`,
          'RSS median at 10-30 % → last 20 %': `${(warmRss / 1048576).toFixed(0)} → ${(endRss / 1048576).toFixed(0)} MB (${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MB; peak ${(peak / 1048576).toFixed(0)} MB)`,
          mutations: [...kinds].map(([k, n]) => `${k} ${n}`).join(', '),
        },
        notes: c.notes,
      }
    } finally {
      await server.stop()
    }
  },
}

/** For what Node's client will not send. */
function rawSend(port: number, a: Attempt): Promise<string> {
  return new Promise((resolve, reject) => {
    const body = a.req.raw ?? (a.req.body !== undefined ? JSON.stringify(a.req.body) : '')
    const headers = {
      ...a.req.headers,
      ...(a.req.token ? { authorization: `Bearer ${a.req.token}` } : {}),
      ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
    }
    const head = `${a.req.method} ${a.req.url} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${Object.entries(
      headers,
    )
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n')}\r\n\r\n`
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.end(Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)])),
    )
    let text = ''
    socket.on('data', (d) => {
      text += d
    })
    socket.on('close', () => resolve(text))
    socket.on('error', reject)
    setTimeout(() => socket.destroy(), 15_000)
  })
}
