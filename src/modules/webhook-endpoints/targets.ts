import dns from 'node:dns'
import net from 'node:net'
import type { LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'
import { ValidationError } from '../../core/errors.ts'

/**
 * The SSRF guard. A webhook's URL is the endpoint owner's, not ours: without a guard a company
 * could make this service POST into its own network (the database, a cloud's metadata address
 * 169.254.169.254). Only public unicast addresses are reached. Checked at creation for a literal
 * address, and at every delivery on the addresses the name resolves to, in the connection's own
 * lookup (a name that resolves elsewhere between a check and the connection cannot slip through).
 */

/**
 * IPv6's global unicast block. Outside it, what ipaddr.js leaves as plain unicast is unassigned or
 * an old way of writing IPv4 (::/96, IPv4-compatible), which a host may route to the IPv4 address.
 */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3')

/**
 * What WEBHOOK_ALLOW_PRIVATE_TARGETS=true (development, tests, a receiver on the same network)
 * lets through: loopback and private ranges written plainly. The same addresses written inside
 * IPv6 (::ffff:127.0.0.1, NAT64, 6to4, Teredo) stay refused: a filter in front of this service
 * that knows only the plain forms would let them through.
 */
const PLAIN_PRIVATE = new Set(['ipv4:loopback', 'ipv4:private', 'ipv6:loopback', 'ipv6:uniqueLocal'])

/** Whether a webhook may not reach an IP address: anything outside public unicast, bar the plain private forms when allowed. */
export function isRefusedAddress(address: string, allowPrivate: boolean): boolean {
  if (!ipaddr.isValid(address)) return true
  const ip = ipaddr.parse(address)
  // ipaddr.js names the special ranges (mapped, NAT64, 6to4, Teredo, site-local, ...); the rest is unicast.
  const range: string = ip.range()
  if (range === 'unicast') return ip.kind() === 'ipv6' && !ip.match(GLOBAL_UNICAST_V6)
  return !(allowPrivate && PLAIN_PRIVATE.has(`${ip.kind()}:${range}`))
}

/** The host of a URL as an address, without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '')
}

/** Checks a webhook URL as it is given; a 400 naming the field. */
export function checkTargetUrl(value: string, allowPrivate: boolean, field = 'body/url'): URL {
  let url: URL
  try { url = new URL(value) } catch { throw new ValidationError(`${field} must be an absolute URL (https://...)`) }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ValidationError(`${field} must be an https URL`)
  if (url.protocol === 'http:' && !allowPrivate) throw new ValidationError(`${field} must be an https URL (events carry company data)`)
  if (url.username || url.password) throw new ValidationError(`${field} must not carry credentials (user:password@); the signature authenticates the sender`)
  if (url.hash) throw new ValidationError(`${field} must not have a #fragment`)
  const host = hostOf(url)
  // A literal address is checked here; a name, after its resolution at each delivery.
  if (net.isIP(host) && isRefusedAddress(host, allowPrivate)) {
    throw new ValidationError(allowPrivate
      ? `${field} points to an address webhooks may not reach: a public unicast address, or loopback and private ranges written plainly (127.0.0.1, ::1, 10/8, 172.16/12, 192.168/16, fc00::/7), never IPv4 written inside IPv6`
      : `${field} points to a loopback, private, link-local, multicast or reserved address, or IPv4 written inside IPv6, which webhooks may not reach`)
  }
  return url
}

export class TargetRefused extends Error {}

/** The lookup of a delivery's connection: resolves, then refuses an address outside what isRefusedAddress lets through. */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0)
      const refused = addresses.find((a) => isRefusedAddress(a.address, allowPrivate))
      // The detail is for this service's log; the attempt shows only `connection_refused`.
      if (refused) return callback(new TargetRefused(`${hostname} resolves to ${refused.address}, which webhooks may not reach`), '', 0)
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses)
      callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}
