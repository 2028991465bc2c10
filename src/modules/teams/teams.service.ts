import { batchedByResource, type StoredObject } from '../events/event-objects.ts'
import type { Contract } from '../companies/companies.schemas.ts'
import { randomUUID } from 'node:crypto'
import type { Clock } from '../../core/clock.ts'
import { Conflict, NotFound, ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { isDuplicateTeamCode, type Move, type TeamFilter, type TeamsRepository } from './teams.repository.ts'
import type { KeysetPage } from '../../db/keyset.ts'
import type { Paged } from '../../core/paging.ts'
import type { AddContractInput, ContractTeamParams, Team, TeamInput, TeamMember } from './teams.schemas.ts'

/**
 * Teams and contracts' moves between them. A leader is always a member; members are contracts of
 * the team's company; a code is unique in its company, enforced by the database so a race is a 409.
 */
export function createTeamsService(deps: { repo: TeamsRepository; clock: Clock }) {
  const { repo, clock } = deps
  const leaderIdsOf = batchedByResource(repo.leaderIdsOf, [])

  async function requireCompany(companyId: string) {
    if (!(await repo.companyExists(companyId))) throw new NotFound('Company')
  }

  async function checkReferences(trx: Executor, companyId: string, input: TeamInput) {
    if (input.subsidiary_id && !(await repo.subsidiaryExists(trx, companyId, input.subsidiary_id))) {
      throw new ValidationError('body/subsidiary_id is not a subsidiary of this company')
    }
    const leaders = unique(input.team_leader_ids ?? [])
    const found = await repo.existingContracts(trx, companyId, leaders)
    const missing = leaders.filter((id) => !found.has(id))
    if (missing.length > 0)
      throw new ValidationError(
        `body/team_leader_ids must name contracts of this company; unknown: ${missing.join(', ')}`,
      )
    return leaders
  }

  /** 404 for a team or contract of another company. */
  async function moveContract(move: Move, companyId: string, teamId: string, body: ContractTeamParams) {
    if (body.team_id !== undefined && body.team_id !== teamId)
      throw new ValidationError('body/team_id must equal the team_id of the path')
    const outcome = await repo.moveContract(move, companyId, teamId, body.contract_id, clock.now())
    if (!outcome.team_found) throw new NotFound('Team')
    if (!outcome.contract_found) throw new NotFound('Contract')
  }

  async function withCodeConflict<T>(work: () => Promise<T>, code: string): Promise<T> {
    try {
      return await work()
    } catch (err) {
      if (isDuplicateTeamCode(err)) throw codeTaken(code)
      throw err
    }
  }

  return {
    /** Shares one statement with the creations arriving at the same time. */
    async createTeam(companyId: string, input: TeamInput): Promise<string> {
      const id = randomUUID()
      const leaders = unique(input.team_leader_ids ?? [])
      const outcome = await repo.createTeam(companyId, id, teamValues(input), leaders, clock.now())
      if (!outcome.company_found) throw new NotFound('Company')
      if (!outcome.subsidiary_found) throw new ValidationError('body/subsidiary_id is not a subsidiary of this company')
      const found = new Set(outcome.leaders_found)
      const missing = leaders.filter((l) => !found.has(l))
      if (missing.length > 0)
        throw new ValidationError(
          `body/team_leader_ids must name contracts of this company; unknown: ${missing.join(', ')}`,
        )
      if (!outcome.created) throw codeTaken(input.code)
      return id
    },

    /** Replaces the team; team_leader_ids, when sent, is the new leader set and former leaders stay members. */
    async updateTeam(companyId: string, teamId: string, input: TeamInput) {
      const now = clock.now()
      await withCodeConflict(
        () =>
          repo.transaction(async (trx) => {
            if ((await repo.lockTeams(trx, companyId, [teamId])).length === 0) throw new NotFound('Team')
            const leaders = await checkReferences(trx, companyId, input)
            await repo.updateTeam(trx, companyId, teamId, teamValues(input), now)
            if (input.team_leader_ids !== undefined) {
              await repo.demoteLeadersExcept(trx, companyId, teamId, leaders)
              await repo.makeLeaders(trx, companyId, teamId, leaders, now)
            }
          }),
        input.code,
      )
    },

    async listTeams(companyId: string): Promise<Team[]> {
      const teams = await repo.listTeams(companyId)
      if (!teams) throw new NotFound('Company')
      return teams
    },

    async getTeam(companyId: string, teamId: string): Promise<Team> {
      const team = await repo.findTeam(companyId, teamId)
      if (!team) throw new NotFound('Team')
      return teamView(team)
    },

    /** As GET .../teams/{id} answers: the stored row with the leaders of its moment (read now if not stored). */
    async teamEventObject(stored: StoredObject): Promise<Team> {
      const leaders: string[] = Array.isArray(stored.team_leader_ids)
        ? stored.team_leader_ids
        : await leaderIdsOf(stored.company_id, stored.id)
      return teamView({ ...(stored as Team), team_leader_ids: leaders })
    },

    /**
     * The contract as the team's member list shows it; a removal keeps the team among its team_ids.
     * Without the contract (gone): its id, the event's team and the leadership, as the event stored them.
     */
    memberEventObject(stored: StoredObject, event: { type: string }, contract?: Contract): TeamMember | MemberFields {
      if (!contract) return { id: stored.contract_id, team_ids: [stored.team_id], is_leader: stored.is_leader }
      const teamIds =
        event.type === 'team.member_removed' && !contract.team_ids.includes(stored.team_id)
          ? [...contract.team_ids, stored.team_id].sort()
          : contract.team_ids
      return { ...contract, team_ids: teamIds, is_leader: stored.is_leader }
    },

    async listTeamsPage(companyId: string, filter: TeamFilter, page: KeysetPage): Promise<Paged<Team>> {
      if (!(await repo.companyExists(companyId))) throw new NotFound('Company')
      return repo.listTeamsPage(companyId, filter, page)
    },

    async listMembers(companyId: string, teamId: string, page: KeysetPage): Promise<Paged<TeamMember>> {
      if (!(await repo.findTeam(companyId, teamId))) throw new NotFound('Team')
      const paged = await repo.listMembers(companyId, teamId, page)
      return { ...paged, items: paged.items.map((row) => ({ ...row, team_ids: row.team_ids ?? [] })) }
    },

    upgrade: (companyId: string, teamId: string, body: ContractTeamParams) =>
      moveContract('lead', companyId, teamId, body),

    downgrade: (companyId: string, teamId: string, body: ContractTeamParams) =>
      moveContract('follow', companyId, teamId, body),

    remove: (companyId: string, teamId: string, body: ContractTeamParams) =>
      moveContract('leave', companyId, teamId, body),

    /** All or nothing; a team already joined is unchanged. */
    async addToTeams(companyId: string, input: AddContractInput) {
      await requireCompany(companyId)
      const teamIds = unique(input.team_ids).sort()
      await repo.transaction(async (trx) => {
        const found = new Set(await repo.lockTeams(trx, companyId, teamIds))
        const missing = teamIds.filter((id) => !found.has(id))
        if (missing.length > 0) throw new NotFound(`Team ${missing.join(', ')}`)
        if (!(await repo.existingContracts(trx, companyId, [input.contract_id])).has(input.contract_id))
          throw new NotFound('Contract')
        await repo.addMembers(trx, companyId, teamIds, [input.contract_id], clock.now())
      })
    },
  }
}

const codeTaken = (code: string) =>
  new Conflict(`A team with code ${JSON.stringify(code)} already exists in this company`)

function teamValues(input: TeamInput) {
  return { name: input.name, code: input.code, subsidiary_id: input.subsidiary_id ?? null }
}

const unique = (ids: string[]) => [...new Set(ids)]

export type TeamsService = ReturnType<typeof createTeamsService>

type MemberFields = Pick<TeamMember, 'id' | 'team_ids' | 'is_leader'>

function teamView(row: Team): Team {
  return {
    id: row.id,
    name: row.name,
    code: row.code,
    company_id: row.company_id,
    subsidiary_id: row.subsidiary_id,
    team_leader_ids: row.team_leader_ids,
  }
}
