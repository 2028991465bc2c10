/**
 * The subscription lifecycle's public face: its service (the lifecycle, and what a provider's
 * integration needs to lay its copies over ours) and the shapes other modules show.
 */
export type { SubscriptionsService } from './subscriptions.service.ts'
export { changesBetween } from './subscriptions.history.ts'
export { SubscriptionDetails, SubscriptionStatusValue } from './subscriptions.schemas.ts'
export { checkCharge } from './subscriptions.money.ts'
