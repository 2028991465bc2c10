import { client, locationId } from './http.ts'
import { communicationBody, teamBody, uniq, type Tenant } from './fixtures.ts'
import { sleep } from './server.ts'

/**
 * Writers that create teams and communications until stopped, remembering every write that was
 * acknowledged (a 2xx) and every status seen. A write with no answer (the server died) is not
 * acknowledged: the client cannot know, and it may or may not be stored.
 */
export interface Load {
  teams: Map<string, string> // code -> id of acknowledged team creations
  communications: Map<string, string> // subject -> id
  statuses: Map<number, number>
  /** Keys of writes that were refused (an answer other than 2xx): they must have no effect. */
  refused: Set<string>
  /** Answers that broke a rule: 5xx other than 503, 503 without Retry-After, bodies not {errors, code}. */
  violations: string[]
  noAnswer: number
  requests: number
  stop(): Promise<void>
}

export function startLoad(
  base: string,
  tenant: Tenant,
  options: { connections: number; onAnswer?: (status: number, sentAt: number) => void },
): Load {
  const api = client(base, tenant.token)
  let stopping = false
  const load: Load = {
    teams: new Map(),
    communications: new Map(),
    statuses: new Map(),
    refused: new Set(),
    violations: [],
    noAnswer: 0,
    requests: 0,
    async stop() {
      stopping = true
      await Promise.all(workers)
    },
  }
  async function worker(n: number) {
    let i = 0
    while (!stopping) {
      const team = i++ % 2 === 0
      const key = uniq(team ? `T${n}` : `C${n}`)
      load.requests++
      const sentAt = Date.now()
      try {
        const res = team
          ? await api.call({
              method: 'POST',
              url: `/api/v1/companies/${tenant.id}/teams`,
              body: teamBody(key),
              timeoutMs: 20_000,
            })
          : await api.call({
              method: 'POST',
              url: `/api/v1/companies/${tenant.id}/communications`,
              body: communicationBody(key, tenant.team),
              timeoutMs: 20_000,
            })
        load.statuses.set(res.status, (load.statuses.get(res.status) ?? 0) + 1)
        options.onAnswer?.(res.status, sentAt)
        if (res.status >= 200 && res.status < 300) {
          const id = locationId(res)
          ;(team ? load.teams : load.communications).set(key, id)
        } else {
          load.refused.add(key)
          const problem = judgeError(res.status, res.headers['retry-after'], res.text)
          if (problem) load.violations.push(`${team ? 'team' : 'communication'}: ${problem}`)
          if (res.status === 503 || res.status === 429) await sleep(100)
        }
      } catch {
        load.noAnswer++
        await sleep(50)
      }
    }
  }
  const workers = Array.from({ length: options.connections }, (_, n) => worker(n))
  return load
}

/** What is wrong with an error answer, or undefined. */
export function judgeError(status: number, retryAfter: unknown, text: string): string | undefined {
  if (status >= 500 && status !== 503) return `${status} ${text.slice(0, 200)}`
  if (status === 503 && !retryAfter) return `503 without Retry-After: ${text.slice(0, 200)}`
  try {
    const body = JSON.parse(text)
    if (typeof body?.errors !== 'string' || typeof body?.code !== 'string')
      return `${status} body is not {errors, code}: ${text.slice(0, 200)}`
  } catch {
    return `${status} body is not JSON: ${text.slice(0, 200)}`
  }
  return undefined
}

/** Which acknowledged writes are missing, or stored more than once, as read back through the API. */
export async function verifyStored(base: string, tenant: Tenant, load: Pick<Load, 'teams' | 'communications'>) {
  const api = client(base, tenant.token)
  const teams = (await api.expect(200, { url: `/api/v1/companies/${tenant.id}/teams` })).json() as Array<{
    id: string
    code: string
    team_leader_ids: string[]
  }>
  const comms = (await api.expect(200, { url: `/api/v1/companies/${tenant.id}/communications` })).json() as Array<{
    id: string
    subject: string
  }>
  const teamCount = countBy(teams.map((t) => t.code))
  const commCount = countBy(comms.map((c) => c.subject))
  const missing: string[] = []
  const duplicated: string[] = []
  for (const code of load.teams.keys()) {
    const n = teamCount.get(code) ?? 0
    if (n === 0) missing.push(`team ${code}`)
    if (n > 1) duplicated.push(`team ${code} x${n}`)
  }
  for (const subject of load.communications.keys()) {
    const n = commCount.get(subject) ?? 0
    if (n === 0) missing.push(`communication ${subject}`)
    if (n > 1) duplicated.push(`communication ${subject} x${n}`)
  }
  return { missing, duplicated, teams, comms, stored: new Set([...teamCount.keys(), ...commCount.keys()]) }
}

function countBy(values: string[]) {
  const m = new Map<string, number>()
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1)
  return m
}
