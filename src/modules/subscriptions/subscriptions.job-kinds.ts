/**
 * The kinds of the scheduler's jobs that move a subscription on: scheduled by steps and the service, run by
 * subscriptions.jobs.ts.
 */
export const TRIAL_END_JOB = 'subscription.trial_end'
export const TERM_END_JOB = 'subscription.term_end'
export const RESUME_JOB = 'subscription.resume'
