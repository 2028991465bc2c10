import type { Scenario } from '../lib/context.ts'
import { concurrentWriters } from './concurrent-writers.ts'
import { races } from './races.ts'
import { killRestart } from './kill-restart.ts'
import { postgresDown } from './postgres-down.ts'
import { sigterm } from './sigterm.ts'
import { redirects } from './redirects.ts'
import { limits } from './limits.ts'
import { idempotency } from './idempotency.ts'
import { tenants } from './tenants.ts'
import { hostile } from './hostile.ts'
import { schedulerFaults } from './scheduler.ts'
import { schedulerFairness } from './fairness.ts'
import { pathologicalBodies } from './pathological-bodies.ts'
import { idempotencyKill } from './idempotency-kill.ts'
import { webhooksKill } from './webhooks-kill.ts'

export const scenarios: Scenario[] = [
  concurrentWriters,
  races,
  killRestart,
  postgresDown,
  sigterm,
  hostile,
  tenants,
  redirects,
  limits,
  idempotency,
  schedulerFaults,
  pathologicalBodies,
  schedulerFairness,
  idempotencyKill,
  webhooksKill,
]
