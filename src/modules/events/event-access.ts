import type { Principal } from '../../core/principal.ts'
import type { READ_WRITE_AREAS } from '../oauth/scopes.ts'
import { EVENT_RESOURCES, type EventType } from './outbox.ts'

type EventResource = EventType extends `${infer R}.${string}` ? R : never

/**
 * A company token reads a resource's events only with `read:<area>`, as the object itself, and an
 * endpoint is sent what its creator could read. Typed by EVENT_TYPES' resources, so a new resource
 * cannot compile without its area.
 */
export const EVENT_RESOURCE_AREAS: Record<EventResource, (typeof READ_WRITE_AREAS)[number]> = {
  company: 'company',
  subsidiary: 'company',
  subscription: 'company',
  invoice: 'company',
  credit_note: 'company',
  customer: 'company',
  charge: 'company',
  ping: 'company',
  contract: 'contract',
  team: 'team',
  holiday: 'holiday',
  communication: 'company_communication',
  message: 'company_communication_message',
}

/** The area of an event type or `<resource>.*` pattern. */
export const areaOf = (typeOrPattern: string) => EVENT_RESOURCE_AREAS[typeOrPattern.split('.')[0] as EventResource]

/** The resources whose events a token with these scopes may read. */
export function readableResources(scopes: ReadonlySet<string>): string[] {
  return EVENT_RESOURCES.filter((resource) => scopes.has(`read:${areaOf(resource)}`))
}

/**
 * What a principal may read of the event log: every resource for a platform token (undefined), else its readable ones.
 */
export function resourcesReadableBy(principal: Principal | null): string[] | undefined {
  return principal && principal.companyId !== null ? readableResources(principal.scopes) : undefined
}
