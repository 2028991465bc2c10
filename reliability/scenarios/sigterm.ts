import fs from 'node:fs'
import path from 'node:path'
import { checks, fmt, type Scenario } from '../lib/context.ts'
import { client } from '../lib/http.ts'
import { platformToken, tenant } from '../lib/fixtures.ts'
import { startLoad, verifyStored } from '../lib/load.ts'
import { sleep, startServer } from '../lib/server.ts'

/** 4. SIGTERM under load: exit 0 within 10 s, every answered write kept, PGlite closed cleanly. */
export const sigterm: Scenario = {
  id: 4,
  title: 'SIGTERM under load',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const store = ctx.store()
    const server = await startServer(store)
    let t: Awaited<ReturnType<typeof tenant>>
    try {
      t = await tenant(server.base, client(server.base, await platformToken(server.base)), 2)
    } catch (err) {
      // Stopped here only if the set-up failed: the scenario's own SIGTERM comes below.
      await server.stop()
      throw err
    }
    const load = startLoad(server.base, t, { connections: 20 })
    await sleep(500 + Math.random() * 1500)
    const t0 = Date.now()
    server.kill('SIGTERM')
    const code = await Promise.race([server.exited, sleep(15_000).then(() => 'still running after 15 s')])
    const exitMs = Date.now() - t0
    await load.stop()
    if (typeof code === 'string') server.kill('SIGKILL')
    c.check(code === 0, `exit code ${code}`)
    c.check(exitMs <= 10_000, `exited after ${exitMs} ms`)
    c.check(!/shutdown failed|shutdown took too long/.test(server.log()), `shutdown log: ${server.log().slice(-500)}`)
    c.check(load.violations.length === 0, `error answers out of contract: ${load.violations.slice(0, 3).join(' / ')}`)
    if (store.engine === 'pglite')
      c.check(
        !fs.existsSync(path.join(store.dataDir, '.lock')),
        'the data directory lock was left behind (PGlite not closed)',
      )
    const again = await startServer(store)
    try {
      const stored = await verifyStored(again.base, t, load)
      c.check(stored.missing.length === 0, `answered writes missing: ${stored.missing.slice(0, 5).join(', ')}`)
      c.check(stored.duplicated.length === 0, `duplicated: ${stored.duplicated.slice(0, 5).join(', ')}`)
      const refusedButStored = [...load.refused].filter((k) => stored.stored.has(k))
      c.check(
        refusedButStored.length === 0,
        `writes answered with an error but stored: ${refusedButStored.slice(0, 5).join(', ')}`,
      )
      return {
        pass: c.pass,
        figures: {
          'exit code': String(code),
          'exit after SIGTERM': `${exitMs} ms`,
          'acknowledged writes': load.teams.size + load.communications.size,
          statuses: fmt(load.statuses),
          missing: stored.missing.length,
          'refused yet stored': refusedButStored.length,
        },
        notes: c.notes,
      }
    } finally {
      await again.stop()
    }
  },
}
