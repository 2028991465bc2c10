import type { Scenario } from '../lib/context.ts'
import { concurrentWriters } from './concurrent-writers.ts'
import { killRestart } from './kill-restart.ts'
import { postgresDown } from './postgres-down.ts'
import { sigterm } from './sigterm.ts'

export const scenarios: Scenario[] = [concurrentWriters, killRestart, postgresDown, sigterm]
