import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import type { DB } from '../../db/tables.ts'
import type { Team } from './teams.schemas.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { prepared } from '../../db/prepared.ts'
import { writeBatches, type WriteBatchObserver } from '../../db/write-batches.ts'
import { containing, keyset, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { cutPage } from '../../core/paging.ts'
import { companyExistsOn } from '../../db/company-exists.ts'

/** Teams by name then code (unique in a company). */
const TEAM_ORDER: SortColumn[] = [{ column: 't.name' }, { column: 't.code' }]
const MEMBER_ORDER: SortColumn[] = [
  { column: 'c.last_name' },
  { column: 'c.first_name' },
  { column: 'c.id', cast: 'uuid' },
]

export interface TeamFilter {
  subsidiary_id?: string
  q?: string
}

export interface TeamValues {
  name: string
  code: string
  subsidiary_id: string | null
}

/**
 * Teams and memberships; a leader is a member row with is_leader, which the contracts' team_ids
 * read too. Membership writes use INSERT ... ON CONFLICT, so concurrent moves never duplicate a row.
 */
export function createTeamsRepository(db: Kysely<DB>, options: { observer?: WriteBatchObserver } = {}) {
  // Hot paths: one prepared statement each; the list comes back as one json value (one native
  // JSON.parse), and as no row when the company does not exist.
  const teamsOfCompany = prepared(
    db,
    (companyId: string) => sql<{ teams: Team[] | null }>`
    SELECT (
      SELECT json_agg(json_build_object(
        'id', t.id, 'name', t.name, 'code', t.code, 'company_id', t.company_id, 'subsidiary_id', t.subsidiary_id,
        'team_leader_ids', ${leaderIds}) ORDER BY t.name, t.code)
      FROM teams t WHERE t.company_id = c.id
    ) AS teams
    FROM companies c WHERE c.id = ${companyId}::uuid`,
  )
  const oneTeam = prepared(db, (companyId: string, teamId: string) =>
    teamsQuery(db, companyId).where('t.id', '=', teamId),
  )
  /**
   * Many teams in one statement: a failed check or taken code skips that team, never the batch; a team
   * already there with its own id counts as created (a rerun batch). Inserts go in (company, code) order
   * against deadlocks. One answer row per team, in order.
   */
  const createTeamsStatement = prepared(
    db,
    (teams: string, leaders: string) => sql<CreateTeamOutcome & { n: number }>`
    WITH wanted AS (
        SELECT * FROM jsonb_to_recordset(${teams}::jsonb)
          AS t(n int, company_id uuid, id uuid, name text, code text, subsidiary_id uuid, leader_count int,
            created_at timestamptz)
      ),
      wanted_leaders AS (SELECT * FROM jsonb_to_recordset(${leaders}::jsonb) AS l(n int, contract_id uuid)),
      checked AS (
        SELECT w.*,
          EXISTS (SELECT 1 FROM companies c WHERE c.id = w.company_id) AS company_found,
          (w.subsidiary_id IS NULL OR EXISTS (SELECT 1 FROM subsidiaries s WHERE s.company_id = w.company_id
            AND s.id = w.subsidiary_id)) AS subsidiary_found,
          ARRAY(
            SELECT c.id FROM wanted_leaders l JOIN contracts c ON c.company_id = w.company_id AND c.id = l.contract_id
              WHERE l.n = w.n
          ) AS leaders_found
        FROM wanted w
      ),
      team AS (
        INSERT INTO teams (company_id, id, name, code, subsidiary_id, created_at, updated_at)
        SELECT company_id, id, name, code, subsidiary_id, created_at, created_at FROM checked
        WHERE company_found AND subsidiary_found AND cardinality(leaders_found) = leader_count
        ORDER BY company_id, code, n
        ON CONFLICT (company_id, code) DO NOTHING
        RETURNING id
      ),
      members AS (
        INSERT INTO team_members (company_id, team_id, contract_id, is_leader, created_at)
        SELECT c.company_id, c.id, leader, true, c.created_at FROM checked c JOIN team ON team.id = c.id,
          unnest(c.leaders_found) AS leader
      )
    SELECT c.n, c.company_found, c.subsidiary_found, to_json(c.leaders_found) AS leaders_found,
      EXISTS (SELECT 1 FROM team WHERE team.id = c.id) OR EXISTS (SELECT 1 FROM teams t
        WHERE t.company_id = c.company_id AND t.id = c.id) AS created
    FROM checked c ORDER BY c.n`,
  )
  const createTeamBatched = writeBatches(
    async (batch: NewTeam[]) => {
      // jsonb refuses a lone surrogate: made well formed as the driver does for text, so one name cannot fail the
      // batch.
      const teams = batch.map((t, n) => ({
        n,
        company_id: t.companyId,
        id: t.id,
        name: wellFormed(t.values.name),
        code: wellFormed(t.values.code),
        subsidiary_id: t.values.subsidiary_id,
        leader_count: t.leaders.length,
        created_at: t.now.toISOString(),
      }))
      const leaders = batch.flatMap((t, n) => t.leaders.map((contract_id) => ({ n, contract_id })))
      return createTeamsStatement(JSON.stringify(teams), JSON.stringify(leaders))
    },
    { name: 'team_creation', maxItems: 64, maxInFlight: 1, observer: options.observer },
  )

  // One contract's move in one team as one statement: the team locked as lockTeams does, the
  // contract checked. Answers which of the two was found.
  const moveStatement = (change: (args: { companyId: string; now: string }) => RawBuilder<unknown>) =>
    prepared(
      db,
      (companyId: string, teamId: string, contractId: string, now: string) => sql<MoveOutcome>`
      WITH team AS (SELECT id FROM teams WHERE company_id = ${companyId}::uuid AND id = ${teamId}::uuid FOR UPDATE),
        contract AS (SELECT id FROM contracts WHERE company_id = ${companyId}::uuid AND id = ${contractId}::uuid),
        moved AS (${change({ companyId, now })})
      SELECT EXISTS (SELECT 1 FROM team) AS team_found, EXISTS (SELECT 1 FROM contract) AS contract_found`,
    )
  const moves: Record<Move, ReturnType<typeof moveStatement>> = {
    lead: moveStatement(
      ({ companyId, now }) => sql`
      INSERT INTO team_members (company_id, team_id, contract_id, is_leader, created_at)
      SELECT ${companyId}::uuid, team.id, contract.id, true, ${now}::timestamptz FROM team, contract
      ON CONFLICT (company_id, team_id, contract_id) DO UPDATE SET is_leader = true`,
    ),
    follow: moveStatement(
      ({ companyId }) => sql`
      UPDATE team_members m SET is_leader = false FROM team, contract
      WHERE m.company_id = ${companyId}::uuid AND m.team_id = team.id AND m.contract_id = contract.id`,
    ),
    leave: moveStatement(
      ({ companyId }) => sql`
      DELETE FROM team_members m USING team, contract
      WHERE m.company_id = ${companyId}::uuid AND m.team_id = team.id AND m.contract_id = contract.id`,
    ),
  }

  return {
    moveContract: async (
      move: Move,
      companyId: string,
      teamId: string,
      contractId: string,
      now: Date,
    ): Promise<MoveOutcome> => (await moves[move](companyId, teamId, contractId, now.toISOString()))[0]!,

    transaction: <T>(fn: (trx: Transaction<DB>) => Promise<T>) => db.transaction().execute(fn),

    /** Creates a team and its leaders' memberships, or says which reference is missing or that the code is taken. */
    createTeam: (
      companyId: string,
      id: string,
      values: TeamValues,
      leaders: string[],
      now: Date,
    ): Promise<CreateTeamOutcome> => createTeamBatched({ companyId, id, values, leaders, now }),

    async updateTeam(
      trx: Executor,
      companyId: string,
      teamId: string,
      values: TeamValues,
      now: Date,
    ): Promise<boolean> {
      const result = await trx
        .updateTable('teams')
        .set({ ...values, updated_at: now })
        .where('company_id', '=', companyId)
        .where('id', '=', teamId)
        .executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },

    /** Locks the teams in id order (no deadlocks) and answers those found; membership writes lock first. */
    async lockTeams(trx: Executor, companyId: string, teamIds: string[]): Promise<string[]> {
      if (teamIds.length === 0) return []
      const rows = await trx
        .selectFrom('teams')
        .select('id')
        .where('company_id', '=', companyId)
        .where('id', 'in', teamIds)
        .orderBy('id')
        .forUpdate()
        .execute()
      return rows.map((r) => r.id)
    },

    async existingContracts(executor: Executor, companyId: string, contractIds: string[]): Promise<Set<string>> {
      if (contractIds.length === 0) return new Set()
      const rows = await executor
        .selectFrom('contracts')
        .select('id')
        .where('company_id', '=', companyId)
        .where('id', 'in', contractIds)
        .execute()
      return new Set(rows.map((r) => r.id))
    },

    subsidiaryExists: async (executor: Executor, companyId: string, subsidiaryId: string) =>
      (await executor
        .selectFrom('subsidiaries')
        .select('id')
        .where('company_id', '=', companyId)
        .where('id', '=', subsidiaryId)
        .executeTakeFirst()) !== undefined,

    companyExists: companyExistsOn(db),

    async addMembers(trx: Executor, companyId: string, teamIds: string[], contractIds: string[], now: Date) {
      const rows = teamIds.flatMap((team_id) =>
        contractIds.map((contract_id) => ({
          company_id: companyId,
          team_id,
          contract_id,
          is_leader: false,
          created_at: now,
        })),
      )
      if (rows.length === 0) return
      await trx
        .insertInto('team_members')
        .values(rows)
        .onConflict((oc) => oc.columns(['company_id', 'team_id', 'contract_id']).doNothing())
        .execute()
    },

    async makeLeaders(trx: Executor, companyId: string, teamId: string, contractIds: string[], now: Date) {
      if (contractIds.length === 0) return
      await trx
        .insertInto('team_members')
        .values(
          contractIds.map((contract_id) => ({
            company_id: companyId,
            team_id: teamId,
            contract_id,
            is_leader: true,
            created_at: now,
          })),
        )
        .onConflict((oc) => oc.columns(['company_id', 'team_id', 'contract_id']).doUpdateSet({ is_leader: true }))
        .execute()
    },

    demoteLeadersExcept: (trx: Executor, companyId: string, teamId: string, keep: string[]) => {
      let query = trx
        .updateTable('team_members')
        .set({ is_leader: false })
        .where('company_id', '=', companyId)
        .where('team_id', '=', teamId)
        .where('is_leader', '=', true)
      if (keep.length > 0) query = query.where('contract_id', 'not in', keep)
      return query.execute()
    },

    /** The company's teams by name, or undefined when there is no such company. */
    async listTeams(companyId: string): Promise<Team[] | undefined> {
      const [row] = await teamsOfCompany(companyId)
      return row && (row.teams ?? [])
    },
    /** A page or filtered view of the teams, in the whole list's order. `q`: name or code contains. */
    async listTeamsPage(companyId: string, filter: TeamFilter, page: KeysetPage) {
      let query = teamsQuery(db, companyId)
      if (filter.subsidiary_id !== undefined) query = query.where('t.subsidiary_id', '=', filter.subsidiary_id)
      if (filter.q !== undefined) {
        const pattern = containing(filter.q)
        query = query.where((eb) => eb.or([eb('t.name', 'ilike', pattern), eb('t.code', 'ilike', pattern)]))
      }
      return cutPage(await keyset(query, TEAM_ORDER, page).execute(), page, (row) => [row.name, row.code])
    },
    findTeam: async (companyId: string, teamId: string): Promise<Team | undefined> =>
      (await oneTeam(companyId, teamId))[0],

    /** Leader ids keyed `<company_id>/<team_id>`; teams without leaders absent. */
    async leaderIdsOf(teams: ReadonlyArray<{ companyId: string; id: string }>): Promise<Map<string, string[]>> {
      const rows = await db
        .selectFrom('team_members')
        .select(['company_id', 'team_id', 'contract_id'])
        .where((eb) =>
          eb(
            eb.refTuple('company_id', 'team_id'),
            'in',
            teams.map((team) => eb.tuple(team.companyId, team.id)),
          ),
        )
        .where('is_leader', '=', true)
        .orderBy('contract_id')
        .execute()
      const leaders = new Map<string, string[]>()
      for (const row of rows) {
        const key = `${row.company_id}/${row.team_id}`
        leaders.set(key, [...(leaders.get(key) ?? []), row.contract_id])
      }
      return leaders
    },

    listMembers: async (companyId: string, teamId: string, page: KeysetPage) =>
      cutPage(
        await keyset(
          db
            .selectFrom('team_members as m')
            .innerJoin('contracts as c', (join) =>
              join.onRef('c.company_id', '=', 'm.company_id').onRef('c.id', '=', 'm.contract_id'),
            )
            .select(['c.id', 'c.first_name', 'c.last_name', 'c.email', 'c.subsidiary_id', 'c.active', 'm.is_leader'])
            .select(
              sql<string[]>`(SELECT array_agg(o.team_id ORDER BY o.team_id) FROM team_members o
                WHERE o.company_id = c.company_id AND o.contract_id = c.id)`.as('team_ids'),
            )
            .where('m.company_id', '=', companyId)
            .where('m.team_id', '=', teamId),
          MEMBER_ORDER,
          page,
        ).execute(),
        page,
        (row) => [row.last_name, row.first_name, row.id],
      ),
  }
}

// As json, not uuid[]: the driver parses json natively, while arrays go through a slow JavaScript parser.
const leaderIds = sql<
  string[]
>`(SELECT coalesce(json_agg(m.contract_id ORDER BY m.contract_id), '[]') FROM team_members m
  WHERE m.company_id = t.company_id AND m.team_id = t.id AND m.is_leader)`

function teamsQuery(db: Kysely<DB>, companyId: string) {
  return db
    .selectFrom('teams as t')
    .select(['t.id', 't.name', 't.code', 't.company_id', 't.subsidiary_id'])
    .select(leaderIds.as('team_leader_ids'))
    .where('t.company_id', '=', companyId)
}

/** A lone surrogate becomes U+FFFD, as in a text parameter. */
const wellFormed = (text: string) => Buffer.from(text, 'utf8').toString('utf8')

export function isDuplicateTeamCode(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string } | null
  return e?.code === '23505' && (e.constraint === undefined || e.constraint === 'teams_company_id_code_key')
}

export type Move = 'lead' | 'follow' | 'leave'
export interface MoveOutcome {
  team_found: boolean
  contract_found: boolean
}

export interface CreateTeamOutcome {
  company_found: boolean
  subsidiary_found: boolean
  leaders_found: string[]
  created: boolean
}

interface NewTeam {
  companyId: string
  id: string
  values: TeamValues
  leaders: string[]
  now: Date
}

export type TeamsRepository = ReturnType<typeof createTeamsRepository>
