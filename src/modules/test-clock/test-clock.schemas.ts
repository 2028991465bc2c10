import { Type, type Static } from 'typebox'
import { Nullable } from '../../http/schemas.ts'

const EXAMPLE = {
  object: 'test_clock',
  now: '2027-06-01T00:00:00.000Z',
  offset_seconds: 15552000,
  status: 'ready',
  advancing_to: null,
} as const

/** The service's business clock, as Stripe's test clocks and Chargebee's time machine show theirs. */
export const TestClock = Type.Object(
  {
    object: Type.Literal('test_clock', { description: 'Always "test_clock"' }),
    now: Type.String({
      format: 'date-time',
      description: 'The business time now (UTC): what billing, communications and hosted pages take as now',
    }),
    offset_seconds: Type.Integer({
      minimum: 0,
      description: 'How far the business time runs ahead of real time (whole seconds); it only grows',
    }),
    status: Type.Enum(['ready', 'advancing'], {
      description: '"advancing" while an advance runs its due jobs (a second advance is then a 409), else "ready"',
    }),
    advancing_to: Nullable(
      Type.String({ format: 'date-time', description: 'The target of the advance in progress; null when ready' }),
    ),
  },
  { additionalProperties: false, title: 'TestClock', examples: [EXAMPLE] },
)
export type TestClock = Static<typeof TestClock>

export const TestClockAdvance = Type.Object(
  {
    to: Type.String({
      format: 'date-time',
      description:
        'The business time to reach: an ISO 8601 date-time with its offset (Z or ±hh:mm), not before the ' +
        'business time now, at most 10 years after it',
    }),
  },
  { additionalProperties: false, title: 'TestClockAdvance', examples: [{ to: '2027-06-01T00:00:00Z' }] },
)
export type TestClockAdvance = Static<typeof TestClockAdvance>
