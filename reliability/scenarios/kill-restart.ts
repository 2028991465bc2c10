import fs from 'node:fs'
import path from 'node:path'
import { checks, median, type Scenario } from '../lib/context.ts'
import { client } from '../lib/http.ts'
import { platformToken, tenant } from '../lib/fixtures.ts'
import { startLoad, verifyStored } from '../lib/load.ts'
import { sleep, startServer, type Server } from '../lib/server.ts'

/**
 * 2. `kill -9` at a random moment under load, then a restart on the same data: every acknowledged
 * write is there, round after round; PGlite's directory reopens with no manual repair.
 */
export const killRestart: Scenario = {
  id: 2,
  title: 'kill -9 under load, restart',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const store = ctx.store()
    const rounds = ctx.scaled(20, 2)
    let server: Server | undefined = await startServer(store)
    const teams = new Map<string, string>()
    const communications = new Map<string, string>()
    let good = 0
    let unanswered = 0
    const restartMs: number[] = []
    try {
      const admin = client(server.base, await platformToken(server.base))
      const t = await tenant(server.base, admin, 2)
      for (let round = 1; round <= rounds; round++) {
        const load = startLoad(server.base, t, { connections: 20 })
        // A random moment: from the first writes to well into the load.
        await sleep(200 + Math.random() * 1800)
        server.kill('SIGKILL')
        await server.exited
        await load.stop()
        unanswered += load.noAnswer
        for (const [k, v] of load.teams) teams.set(k, v)
        for (const [k, v] of load.communications) communications.set(k, v)
        if (store.engine === 'pglite')
          c.check(fs.existsSync(path.join(store.dataDir, 'pgdata')), 'the data directory is gone')
        const t0 = Date.now()
        server = undefined
        try {
          server = await startServer(store)
        } catch (err) {
          c.check(
            false,
            `round ${round}: the service did not start again on its data: ${(err as Error).message.slice(0, 800)}`,
          )
          break
        }
        restartMs.push(Date.now() - t0)
        const stored = await verifyStored(server.base, t, { teams, communications })
        const ok = c.check(
          stored.missing.length === 0 && stored.duplicated.length === 0,
          `round ${round}: missing ${stored.missing.length} (${stored.missing.slice(0, 3).join(', ')}), duplicated ${stored.duplicated.length}`,
        )
        if (ok) good++
      }
      return {
        pass: c.pass && good === rounds,
        figures: {
          'rounds passed': `${good}/${rounds}`,
          'acknowledged writes': teams.size + communications.size,
          'writes without answer (killed in flight)': unanswered,
          'restart to ready': restartMs.length
            ? `median ${median(restartMs)} ms, max ${Math.max(...restartMs)} ms`
            : 'n/a',
        },
        notes: c.notes,
      }
    } finally {
      await server?.stop()
    }
  },
}
