/**
 * The Chargebee integration's face for other modules: the money operations of decisions §9.2 on a
 * Chargebee subscription (chargebee.money-port.ts), mirrored in the ledger as Chargebee answers them.
 */
export { createChargebeeMoneyPort, type ChargebeeMoneyPort, type ReasonCode } from './chargebee.money-port.ts'
export type { PaymentInput } from './chargebee.money.ts'
