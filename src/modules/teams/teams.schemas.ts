import { Type, type Static } from 'typebox'
import { Code, Name, Nullable, Uuid } from '../../http/schemas.ts'
import { Contract } from '../companies/companies.schemas.ts'

const Ignored = Type.Optional(Type.Unknown({ description: 'Server-owned; accepted and ignored' }))

/** The Team of the spec, with its server-made id. */
export const Team = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    code: Type.String({ description: 'Unique within the company' }),
    company_id: Uuid(),
    subsidiary_id: Nullable(Uuid()),
    team_leader_ids: Type.Array(Uuid(), {
      description: 'Contracts leading the team (always members too), sorted by id',
    }),
  },
  { additionalProperties: false, title: 'Team' },
)
export type Team = Static<typeof Team>

const LeaderIds = Type.Array(Uuid(), {
  maxItems: 200,
  description: 'Contracts of the company; each becomes a member and a leader',
})

export const TeamInput = Type.Object(
  {
    id: Ignored,
    company_id: Ignored,
    name: Name(200),
    code: Code(100, 'Unique within the company (409 otherwise)'),
    subsidiary_id: Type.Optional(Nullable(Uuid('A subsidiary of the same company; omitted or null: none'))),
    team_leader_ids: Type.Optional(LeaderIds),
  },
  { additionalProperties: false, title: 'TeamInput' },
)
export type TeamInput = Static<typeof TeamInput>

export const TeamParams = Type.Object({ company_id: Uuid('The company'), team_id: Uuid('The team') })

/** ContractTeamParams of the spec; the path names the team, so team_id in the body may be left out. */
export const ContractTeamParams = Type.Object(
  {
    contract_id: Uuid('A contract of the company'),
    team_id: Type.Optional(Uuid('When sent, must equal the team of the path')),
  },
  { additionalProperties: false, title: 'ContractTeamParams' },
)
export type ContractTeamParams = Static<typeof ContractTeamParams>

/** Endpoint 35: one contract, many teams. */
export const AddContractInput = Type.Object(
  {
    contract_id: Uuid('A contract of the company'),
    team_ids: Type.Array(Uuid(), {
      maxItems: 200,
      description: 'Teams of the company to join; already a member: nothing changes',
    }),
  },
  { additionalProperties: false, title: 'AddContractToTeams' },
)
export type AddContractInput = Static<typeof AddContractInput>

/** A member of a team: the Contract with whether it leads this team. */
export const TeamMember = Type.Object(
  {
    ...Contract.properties,
    is_leader: Type.Boolean({ description: 'True when the contract leads this team' }),
  },
  { additionalProperties: false, title: 'TeamMember' },
)
export type TeamMember = Static<typeof TeamMember>
