import type { Principal } from '../../core/principal.ts'
import type { READ_WRITE_AREAS } from '../oauth/scopes.ts'
import { EVENT_RESOURCES, type EventType } from './outbox.ts'

type EventResource = EventType extends `${infer R}.${string}` ? R : never

/**
 * The scope area each resource's events belong to: a company token reads an event only with
 * `read:<area>` of its resource, as it would read the object itself (a token that may not read
 * contracts must not read them in contract.* events), and a company's webhook endpoint is sent
 * the events its creator could read. The company's subscription, invoices and credit notes are
 * the company area's, as their routes are (decisions §2). Typed by the resources of EVENT_TYPES,
 * so a new resource cannot compile without its area.
 */
export const EVENT_RESOURCE_AREAS: Record<EventResource, typeof READ_WRITE_AREAS[number]> = {
  company: 'company', subsidiary: 'company', subscription: 'company', invoice: 'company', credit_note: 'company', ping: 'company',
  contract: 'contract', team: 'team', holiday: 'holiday', communication: 'company_communication', message: 'company_communication_message',
}

/** The area of an event type or `<resource>.*` pattern. */
export const areaOf = (typeOrPattern: string) => EVENT_RESOURCE_AREAS[typeOrPattern.split('.')[0] as EventResource]

/** The resources whose events a token with these scopes may read. */
export function readableResources(scopes: ReadonlySet<string>): string[] {
  return EVENT_RESOURCES.filter((resource) => scopes.has(`read:${areaOf(resource)}`))
}

/** What a principal may read of the event log: every resource for a platform token (undefined), else its readable ones. */
export function resourcesReadableBy(principal: Principal | null): string[] | undefined {
  return principal && principal.companyId !== null ? readableResources(principal.scopes) : undefined
}
