import autocannon from 'autocannon'
import pg from 'pg'
import { startServer, runLoad, pinSelf, postgresCpuMs, cpuMs, sleep } from './processes.ts'
import { ADMIN, seedThroughApi } from './seed.ts'

// Builds of the server alternated on POST teams (batched) and PUT teams (one commit each):
//   COMPARE_DATABASE_URL=postgres://postgres@127.0.0.1:5432/compare ROUNDS=3 SECONDS=10 \
//     node --import tsx bench/compare-writes.ts scratch/old scratch/new
// Each build gets its own database; `pgMs` counts every postgres process of the machine.
const url = new URL(process.env.COMPARE_DATABASE_URL ?? '')
const name = url.pathname.slice(1)
if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error('COMPARE_DATABASE_URL must name a database (letters, digits, _)')
const builds = process.argv.slice(2)
const databaseOf = (i: number) => {
  const u = new URL(url)
  u.pathname = `/${name}_${i}`
  return u.toString()
}
const adminUrl = new URL(url)
adminUrl.pathname = '/postgres'
const admin = new pg.Client({ connectionString: adminUrl.toString() })
await admin.connect()
for (let i = 0; i < builds.length; i++) {
  await admin.query(`DROP DATABASE IF EXISTS ${name}_${i}`)
  await admin.query(`CREATE DATABASE ${name}_${i}`)
}
await admin.end()
pinSelf()
const rounds = Number(process.env.ROUNDS ?? 3)
const seconds = Number(process.env.SECONDS ?? 10)
for (let round = 0; round < rounds; round++) {
  for (const build of builds) {
    process.env.BENCH_SERVER_BUNDLE = `${build}/server.js`
    const server = await startServer({
      DATABASE_URL: databaseOf(builds.indexOf(build)),
      ADMIN_CLIENT_ID: ADMIN.client_id,
      ADMIN_CLIENT_SECRET: ADMIN.client_secret,
      SCHEDULER_ENABLED: 'false',
    })
    const seeded = await seedThroughApi(server.url)
    const w = seeded.writer
    const headers = { authorization: `Bearer ${w.token}`, 'content-type': 'application/json' }
    await sleep(500)
    let pg0 = postgresCpuMs()
    let s0 = cpuMs(server.child.pid!)
    const post = await runLoad({
      url: `${server.url}/api/v1/companies/${w.id}/teams`,
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Load', code: 'x', team_leader_ids: [w.leaders[0]] }),
      uniqueCode: `R${round}${builds.indexOf(build)}-`,
      connections: 32,
      seconds,
    })
    const postPg = (postgresCpuMs() - pg0) / post.total
    const postSrv = (cpuMs(server.child.pid!) - s0) / post.total
    const ids: string[] = []
    for (let i = 0; i < 64; i++) {
      const res = await fetch(`${server.url}/api/v1/companies/${w.id}/teams`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: `P${i}`, code: `P${round}-${builds.indexOf(build)}-${i}`, team_leader_ids: [] }),
      })
      ids.push(res.headers.get('location')!.split('/').pop()!)
    }
    let n = 0
    pg0 = postgresCpuMs()
    s0 = cpuMs(server.child.pid!)
    const put = await autocannon({
      url: server.url,
      connections: 32,
      duration: seconds,
      headers,
      requests: [
        {
          method: 'PUT',
          setupRequest: (r: any) => {
            const k = n++
            return {
              ...r,
              path: `/api/v1/companies/${w.id}/teams/${ids[k % 64]}`,
              body: JSON.stringify({ name: `N${k}`, code: `P${round}-${builds.indexOf(build)}-${k % 64}` }),
            }
          },
        },
      ],
    } as any)
    const putOk = (put as any)['2xx'] as number
    const putPg = (postgresCpuMs() - pg0) / putOk
    const putSrv = (cpuMs(server.child.pid!) - s0) / putOk
    console.log(
      JSON.stringify({
        round,
        build,
        post: {
          rps: Math.round(post.rps),
          p99: post.p99,
          non2xx: post.non2xx,
          pgMs: +postPg.toFixed(3),
          srvMs: +postSrv.toFixed(3),
        },
        put: {
          rps: Math.round(putOk / put.duration),
          p99: put.latency.p99,
          non2xx: put.non2xx,
          pgMs: +putPg.toFixed(3),
          srvMs: +putSrv.toFixed(3),
        },
      }),
    )
    await server.stop()
  }
}
process.exit(0)
