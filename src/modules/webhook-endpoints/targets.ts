import dns from 'node:dns'
import net from 'node:net'
import type { LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'
import { ValidationError } from '../../core/errors.ts'

/**
 * The SSRF guard: a company must not make this service POST into its network (the database, a
 * cloud's metadata address). Only public unicast is reached, checked at creation for a literal
 * address and, in the connection's own lookup, at every delivery.
 */

// Outside 2000::/3, "unicast" is unassigned or an old IPv4 form a host may route to IPv4.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3')

// WEBHOOK_ALLOW_PRIVATE_TARGETS lets through loopback and private ranges written plainly only:
// IPv6 spellings of them stay refused, as a filter in front may know only the plain forms.
const PLAIN_PRIVATE = new Set(['ipv4:loopback', 'ipv4:private', 'ipv6:loopback', 'ipv6:uniqueLocal'])

export function isRefusedAddress(address: string, allowPrivate: boolean): boolean {
  if (!ipaddr.isValid(address)) return true
  const ip = ipaddr.parse(address)
  // ipaddr.js names the special ranges; the rest is unicast.
  const range: string = ip.range()
  if (range === 'unicast') return ip.kind() === 'ipv6' && !ip.match(GLOBAL_UNICAST_V6)
  return !(allowPrivate && PLAIN_PRIVATE.has(`${ip.kind()}:${range}`))
}

export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '')
}

export function checkTargetUrl(value: string, allowPrivate: boolean, field = 'body/url'): URL {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ValidationError(`${field} must be an absolute URL (https://...)`)
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ValidationError(`${field} must be an https URL`)
  if (url.protocol === 'http:' && !allowPrivate)
    throw new ValidationError(`${field} must be an https URL (events carry company data)`)
  if (url.username || url.password)
    throw new ValidationError(
      `${field} must not carry credentials (user:password@); the signature authenticates the sender`,
    )
  if (url.hash) throw new ValidationError(`${field} must not have a #fragment`)
  const host = hostOf(url)
  if (net.isIP(host) && isRefusedAddress(host, allowPrivate)) {
    throw new ValidationError(
      allowPrivate
        ? `${field} points to an address webhooks may not reach: a public unicast address, or loopback and ` +
            'private ranges written plainly (127.0.0.1, ::1, 10/8, 172.16/12, 192.168/16, fc00::/7), never IPv4 ' +
            'written inside IPv6'
        : `${field} points to a loopback, private, link-local, multicast or reserved address, or IPv4 written ` +
            'inside IPv6, which webhooks may not reach',
    )
  }
  return url
}

export class TargetRefused extends Error {}

export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0)
      const refused = addresses.find((a) => isRefusedAddress(a.address, allowPrivate))
      // The attempt shows only `connection_refused`; the detail is for the log.
      if (refused)
        return callback(
          new TargetRefused(`${hostname} resolves to ${refused.address}, which webhooks may not reach`),
          '',
          0,
        )
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses)
      callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}
