import { createRequire } from 'node:module'
import type ChargebeeSdk from 'chargebee'

let sdk: typeof ChargebeeSdk | undefined

/**
 * Chargebee's SDK, loaded where Chargebee is configured and not before: with the schema library
 * it brings, it was 1.6 MB of the 4.2 MB bundle, parsed and run at every start (and kept in
 * memory) by servers that never call Chargebee (bench/findings.md, "Issue 19"). Loaded with
 * require, from node_modules (scripts/build.mjs leaves it out of the bundle), so that creating
 * a client stays synchronous.
 */
export function chargebeeSdk(): typeof ChargebeeSdk {
  return sdk ??= createRequire(import.meta.url)('chargebee') as typeof ChargebeeSdk
}
