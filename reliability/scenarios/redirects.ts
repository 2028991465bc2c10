import { checks, fmt, type Scenario } from '../lib/context.ts'
import { client } from '../lib/http.ts'
import { platformToken, tenant } from '../lib/fixtures.ts'
import { startServer } from '../lib/server.ts'

const HOSTILE = [
  'https://evil.example',
  '//evil.example',
  'https://app.example.com@evil.example',
  'https://app.example.com.evil.example',
  'javascript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  'http://evil.example/back',
  'http://app.example.com/back',
  'https://app.example.com\\@evil.example',
  '/\\evil.example',
  'https://app.example.com/%0d%0aLocation:%20https://evil.example',
  'https://app.example.com/back\r\nSet-Cookie: x=1',
  'https://localhost@evil.example',
  'https://localhost.evil.example',
  'https://evil.example#https://localhost',
  'HTTPS://EVIL.EXAMPLE',
  'https:evil.example',
  '\thttps://evil.example',
  'https://evil.example:443',
]

/**
 * 7. Hostile `redirect_url` values on endpoints 1, 10 and 11: all 400, none echoed in any URL.
 * And the URLs they answer: on the listening address whatever `Host` the request names, sent
 * `no-store`, and their tokens in no line of the service's log (HEAD and 404s included).
 */
export const redirects: Scenario = {
  id: 7,
  title: 'Redirect URLs',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const server = await startServer(ctx.store(), {
      REDIRECT_ALLOWED_HOSTS: 'app.example.com,localhost',
      LOG_LEVEL: 'info',
    })
    try {
      const admin = client(server.base, await platformToken(server.base))
      const t = await tenant(server.base, admin, 1)
      const company = (await t.api.expect(200, { url: `/api/v1/companies/${t.id}` })).json()
      const endpoints = [
        `/api/v1/subscription/${t.id}/manager_page/`,
        `/api/v1/subscription/${company.subscription_customer_id}/portal/`,
        `/api/v1/subscription/${company.subscription_customer_id}/payment_page/`,
      ]
      let sent = 0
      const statuses = new Map<number, number>()
      const tokens: string[] = []
      for (const url of endpoints) {
        for (const host of ['evil.example', `evil.example:${server.port}`]) {
          const res = await t.api.call({
            url: `${url}?redirect_url=${encodeURIComponent('https://app.example.com/back')}`,
            headers: { host, 'x-forwarded-host': 'evil.example' },
          })
          const page = res.status === 200 ? String(res.json().url ?? res.json().access_url) : ''
          c.check(
            page.startsWith(`${server.base}/hosted/`),
            `${url} with Host: ${host}: ${res.status} ${page || res.text.slice(0, 200)}`,
          )
          c.check(res.headers['cache-control'] === 'no-store', `${url}: Cache-Control ${res.headers['cache-control']}`)
          const path = page ? new URL(page).pathname : ''
          if (!path) continue
          tokens.push(path.split('/').pop()!)
          // A page has no HEAD (opening it changes its state): 405, whatever the token; no path beyond it.
          for (const [method, suffix, status] of [
            ['HEAD', '', 405],
            ['HEAD', 'x', 405],
            ['GET', '/unknown', 404],
            ['POST', '/unknown', 404],
          ] as const) {
            const probe = await t.api.call({ method: method as 'GET', url: `${path}${suffix}`, token: undefined })
            c.check(probe.status === status, `${method} ${suffix || '(page)'}: ${probe.status}`)
          }
        }
        const good = await t.api.call({
          url: `${url}?redirect_url=${encodeURIComponent('https://app.example.com/back')}`,
        })
        c.check(good.status === 200, `${url} with an allowed redirect_url: ${good.status} ${good.text.slice(0, 200)}`)
        for (const value of HOSTILE) {
          for (const encoded of [encodeURIComponent(value), value.replace(/ /g, '%20').replace(/#/g, '%23')]) {
            sent++
            const res = await t.api.call({ url: `${url}?redirect_url=${encoded}` }).catch(() => undefined)
            if (!res) continue // a value Node's client refuses to send (raw CR/LF) never reaches the server
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
            c.check(
              res.status === 400,
              `${url} redirect_url=${JSON.stringify(value)}: ${res.status} ${res.text.slice(0, 200)}`,
            )
            const location = String(res.headers.location ?? '')
            c.check(
              !/evil\.example/i.test(res.text) &&
                !/evil\.example/i.test(location) &&
                !res.text.includes(value) &&
                !location.includes(value),
              `${url}: ${JSON.stringify(value)} echoed: ${res.text.slice(0, 200)}`,
            )
          }
        }
      }
      const log = server.log()
      const leaked = tokens.filter((token) => log.includes(token)).length
      c.check(tokens.length === 6 && leaked === 0, `${leaked} of ${tokens.length} hosted tokens in the log`)
      c.check(log.includes('[redacted]'), 'the probes of hosted pages were logged, redacted')
      return {
        pass: c.pass,
        figures: {
          'hostile values': HOSTILE.length,
          requests: sent,
          statuses: fmt(statuses),
          'hosted tokens in the log': `${leaked} of ${tokens.length}`,
        },
        notes: c.notes.slice(0, 15),
      }
    } finally {
      await server.stop()
    }
  },
}
