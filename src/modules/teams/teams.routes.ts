import { Type } from 'typebox'
import type { App } from '../../http/app-types.ts'
import type { ReadCache } from '../../cache/read-cache.ts'
import { replyCached } from '../../cache/cached-reads.ts'
import { accepted } from '../../http/app-types.ts'
import { Accepted, CompanyParams, Uuid } from '../../http/schemas.ts'
import { answerPage, listResponse, pageQuery, readPage } from '../../http/pagination.ts'
import type { TeamsService } from './teams.service.ts'
import { AddContractInput, ContractTeamParams, Team, TeamInput, TeamMember, TeamParams } from './teams.schemas.ts'

const BASE = '/api/v1/companies'

const TeamsQuery = pageQuery({
  subsidiary_id: Type.Optional(Uuid('Only the teams of this subsidiary')),
  q: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Name or code contains this text, case-insensitive' }),
  ),
})

/** Teams of a company and their members. */
export async function teamsRoutes(
  app: App,
  { service, cache }: { service: TeamsService; cache: Pick<ReadCache, 'get'> },
) {
  const tags = ['Teams']
  const access = { area: 'team' }
  const teams = `${BASE}/:company_id/teams`
  const team = `${teams}/:team_id`

  app.post(
    teams,
    {
      config: { access },
      schema: {
        operationId: 'createTeam',
        tags,
        summary: 'Create a team (18)',
        description:
          '`code` is unique within the company (409). Every `team_leader_ids` entry must be a contract of the ' +
          'company (400) and becomes a member and a leader. `subsidiary_id`, when given, must be a subsidiary of ' +
          'the company (400). Answers 202 with `Location` of the new team.',
        params: CompanyParams,
        body: TeamInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      const { company_id } = request.params
      return accepted(reply, `${BASE}/${company_id}/teams/${await service.createTeam(company_id, request.body)}`)
    },
  )

  app.get(
    teams,
    {
      config: { access },
      schema: {
        operationId: 'listTeams',
        tags,
        summary: "List the company's teams (19), by name",
        description:
          "The company's teams by name, then code (unique in the company). Filters: `subsidiary_id`, `q` (name " +
          'or code contains, case-insensitive). Pages with `limit` and `cursor`; without `limit`, the whole list.',
        params: CompanyParams,
        querystring: TeamsQuery,
        response: { 200: listResponse(Type.Array(Team)) },
      },
    },
    async (request, reply) => {
      const companyId = request.params.company_id
      const { limit, cursor: _c, ...filter } = request.query
      // The whole list unfiltered is the hot read, answered from the cache; a page or a filter reads the database.
      if (
        limit === undefined &&
        filter.subsidiary_id === undefined &&
        filter.q === undefined &&
        request.query.cursor === undefined
      ) {
        return replyCached(reply, cache, companyId, 'teams', '', () => service.listTeams(companyId))
      }
      const page = readPage(request, ['text', 'text'])
      return answerPage(request, reply, page, await service.listTeamsPage(companyId, filter, page))
    },
  )

  // A static segment: the router prefers it over `:team_id`, so no team id is ever read as it.
  app.put(
    `${teams}/add_contract`,
    {
      config: { access },
      schema: {
        operationId: 'addContractToTeams',
        tags,
        summary: 'Add a contract to several teams (35)',
        description:
          "The contract joins every listed team, all or nothing. A team or contract that is not the company's: " +
          '404. A team the contract is already a member of is left unchanged (idempotent).',
        params: CompanyParams,
        body: AddContractInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      await service.addToTeams(request.params.company_id, request.body)
      return accepted(reply)
    },
  )

  app.get(
    team,
    {
      config: { access },
      schema: { operationId: 'getTeam', tags, summary: 'Get a team', params: TeamParams, response: { 200: Team } },
    },
    async (request) => service.getTeam(request.params.company_id, request.params.team_id),
  )

  app.put(
    team,
    {
      config: { access },
      schema: {
        operationId: 'updateTeam',
        tags,
        summary: 'Replace a team (24)',
        description:
          'Replaces name, code and subsidiary_id (left out: none). `team_leader_ids`, when sent, replaces the ' +
          'leader set: new leaders become members, former leaders stay members; left out, the leaders are ' +
          'unchanged. Same checks as the creation.',
        params: TeamParams,
        body: TeamInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      await service.updateTeam(request.params.company_id, request.params.team_id, request.body)
      return accepted(reply)
    },
  )

  const moves: Array<{
    path: string
    operationId: string
    summary: string
    description: string
    run: (companyId: string, teamId: string, body: ContractTeamParams) => Promise<void>
  }> = [
    {
      path: 'upgrade_contract',
      operationId: 'upgradeContract',
      summary: 'Make a contract a team leader (20)',
      description:
        'The contract leads the team, joining it first if it is not a member. Already a leader: nothing changes.',
      run: service.upgrade,
    },
    {
      path: 'downgrade_contract',
      operationId: 'downgradeContract',
      summary: 'Remove the team-leader role from a contract (23)',
      description: 'The contract stays a member without leading. Not a leader, or not a member: nothing changes.',
      run: service.downgrade,
    },
    {
      path: 'remove_contract',
      operationId: 'removeContractFromTeam',
      summary: 'Remove a contract from a team',
      description: 'The contract leaves the team, and so its leadership. Not a member: nothing changes.',
      run: service.remove,
    },
  ]
  for (const move of moves) {
    app.put(
      `${team}/${move.path}`,
      {
        config: { access },
        schema: {
          operationId: move.operationId,
          tags,
          summary: move.summary,
          description:
            `${move.description} The contract and the team must be the company's (404 otherwise); team_id in the ` +
            `body, when sent, must equal the path's (400).`,
          params: TeamParams,
          body: ContractTeamParams,
          response: { 202: Accepted },
        },
      },
      async (request, reply) => {
        await move.run(request.params.company_id, request.params.team_id, request.body)
        return accepted(reply)
      },
    )
  }

  app.get(
    `${team}/contracts`,
    {
      config: { access },
      schema: {
        operationId: 'listTeamMembers',
        tags,
        summary: "The team's members, each with is_leader",
        description:
          'The members as contracts, by last name, first name, then id. Pages with `limit` and `cursor`; without ' +
          '`limit`, the whole list.',
        params: TeamParams,
        querystring: pageQuery(),
        response: { 200: listResponse(Type.Array(TeamMember)) },
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['text', 'text', 'uuid'])
      return answerPage(
        request,
        reply,
        page,
        await service.listMembers(request.params.company_id, request.params.team_id, page),
      )
    },
  )
}
