export const READ_WRITE_AREAS = [
  'company_communication_message',
  'company_communication',
  'expense_report',
  'expense',
  'expense_type',
  'holiday',
  'justification_type',
  'justification',
  'schedule',
  'team',
  'customers',
  'customer',
  'stamping_device',
  'stamping_area',
  'stamping',
  'activity',
  'activities',
  'activity_type',
  'activity_types',
  'workplace_override',
  'contract_day_schedule_change',
  'contract',
  'export',
  'orders',
  'order',
  'company',
  'request',
  'user_document',
] as const

export const READ_ONLY_AREAS = ['calendar'] as const

export const ALL_AREAS: readonly string[] = [...READ_WRITE_AREAS, ...READ_ONLY_AREAS]

/** Every company holds these, whatever its plan. */
export const BASE_AREAS: readonly string[] = [
  'company',
  'team',
  'holiday',
  'calendar',
  'contract',
  'company_communication',
  'company_communication_message',
  'request',
  'user_document',
]

export type Mode = 'read' | 'write'

export interface Scope {
  name: string
  mode: Mode[]
  api: string
}

export function modesOf(area: string): Mode[] {
  return (READ_ONLY_AREAS as readonly string[]).includes(area) ? ['read'] : ['read', 'write']
}

export function isArea(name: string): boolean {
  return ALL_AREAS.includes(name)
}

export function authorizedScopes(planFeatures: readonly string[]): Scope[] {
  const areas = new Set(BASE_AREAS)
  for (const feature of planFeatures) if (isArea(feature)) areas.add(feature)
  return ALL_AREAS.filter((a) => areas.has(a)).map((area) => ({
    name: displayName(area),
    mode: modesOf(area),
    api: area,
  }))
}

// A cancelled or paused subscription gives no features: nobody pays for them; they come back on resume.
export function grantsFeatures(subscriptionStatus: string | null | undefined): boolean {
  return !!subscriptionStatus && subscriptionStatus !== 'cancelled' && subscriptionStatus !== 'paused'
}

/** A cancelled, paused or missing subscription keeps the company, with the base scopes only. */
export function liveFeatures(
  subscriptionStatus: string | null | undefined,
  planFeatures: readonly string[] | null | undefined,
): readonly string[] {
  return grantsFeatures(subscriptionStatus) ? (planFeatures ?? []) : []
}

export function scopeStrings(scopes: readonly Scope[]): string[] {
  return scopes.flatMap((s) => s.mode.map((m) => `${m}:${s.api}`))
}

export const ALL_SCOPE_STRINGS: readonly string[] = ALL_AREAS.flatMap((area) =>
  modesOf(area).map((m) => `${m}:${area}`),
)

/** One line per scope, shown by the token form of /docs. */
const SCOPE_DESCRIPTIONS: Record<string, string> = {
  'read:company':
    'Read the company, its subsidiaries, clients, events, webhook endpoints, subscription, invoices and credit notes',
  'write:company':
    "Change the company, its subsidiaries, clients, webhook endpoints and subscription; a platform client's also " +
    'the catalogue and companies',
  'read:team': "Read the company's teams, their members and leaders",
  'write:team': 'Create and change teams; add, remove, promote and demote their members',
  'read:contract': "Read the company's contracts (its employees)",
  'write:contract': 'Create and change contracts',
  'read:holiday': 'Read the holidays of the company and its subsidiaries, merged with public calendars',
  'write:holiday': 'Create, change and delete holidays of the company and its subsidiaries',
  'read:company_communication': 'Read communications, their attachments and delivery reports',
  'write:company_communication': 'Create and change communications and upload their attachments',
  'read:company_communication_message': "Read the messages a communication delivered, and an employee's inbox",
  'write:company_communication_message': 'Mark a message opened, or acknowledge it',
}

export function scopeDescription(scope: string): string {
  const own = SCOPE_DESCRIPTIONS[scope]
  if (own) return own
  const [mode, area = ''] = scope.split(':')
  return `${mode === 'write' ? 'Create and change' : 'Read'} ${area.split('_').join(' ')}`
}

function displayName(area: string): string {
  const words = area.split('_').join(' ')
  return words.charAt(0).toUpperCase() + words.slice(1)
}
