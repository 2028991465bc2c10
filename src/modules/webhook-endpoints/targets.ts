import dns from 'node:dns'
import net from 'node:net'
import type { LookupFunction } from 'node:net'
import { ValidationError } from '../../http/errors.ts'

/**
 * The SSRF guard. A webhook's URL is the endpoint owner's, not ours: without a guard a company
 * could make this service POST into its own network (the database, a cloud's metadata address
 * 169.254.169.254). Refused: loopback, private (RFC 1918, unique local), link-local, carrier-grade
 * NAT, multicast, reserved and unspecified addresses. Checked at creation for a literal address,
 * and at every delivery on the addresses the name resolves to, in the connection's own lookup (a
 * name that resolves elsewhere between a check and the connection cannot slip through).
 * WEBHOOK_ALLOW_PRIVATE_TARGETS=true turns it off (development and tests).
 */
const blocked = new net.BlockList()
for (const [address, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(address, prefix, 'ipv4')
for (const [address, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32], ['64:ff9b::', 96], ['100::', 64],
] as const) blocked.addSubnet(address, prefix, 'ipv6')

/** Whether an IP address is one a webhook may not reach. */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address)
  if (family === 4) return blocked.check(address, 'ipv4')
  if (family !== 6) return true
  // An IPv4 address written as IPv6 (::ffff:127.0.0.1) is that IPv4 address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return blocked.check(mapped[1]!, 'ipv4')
  return blocked.check(address, 'ipv6')
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
  if (!allowPrivate && net.isIP(host) && isPrivateAddress(host)) {
    throw new ValidationError(`${field} points to a loopback, private or link-local address, which webhooks may not reach`)
  }
  return url
}

export class TargetRefused extends Error {}

/** The lookup of a delivery's connection: resolves, then refuses a private address. */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0)
      const refused = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address))
      if (refused) return callback(new TargetRefused(`${hostname} resolves to ${refused.address}, a loopback, private or link-local address`), '', 0)
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses)
      callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}
