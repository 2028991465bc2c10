import { createRequire } from 'node:module'
import type ChargebeeSdk from 'chargebee'

let sdk: typeof ChargebeeSdk | undefined

/**
 * Chargebee's SDK, loaded only where Chargebee is configured: it is a large part of the bundle.
 * require from node_modules (left out of the bundle) keeps creating a client synchronous.
 */
export function chargebeeSdk(): typeof ChargebeeSdk {
  return (sdk ??= createRequire(import.meta.url)('chargebee') as typeof ChargebeeSdk)
}
