import { Type, type Static } from 'typebox'

const Day = (description: string) => Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description })
const Minor = (description: string) => Type.Integer({ description })

const filters = {
  currency_code: Type.Optional(
    Type.String({
      pattern: '^[A-Z]{3}$',
      description: 'The ISO 4217 currency counted (default the CURRENCY_CODE setting); other currencies are left out',
    }),
  ),
  plan_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description: "A plan's id: only MRR on that plan counts (moving off it is churn, onto it new or reactivation)",
    }),
  ),
}

export const MrrQuery = Type.Object(
  {
    from: Day('The first point (YYYY-MM-DD, UTC); its movements are relative to the day before'),
    to: Day('The last point (YYYY-MM-DD, UTC), not before from'),
    interval: Type.Optional(
      Type.Union([Type.Literal('day'), Type.Literal('week'), Type.Literal('month')], {
        description: "Points each day, each Sunday, or each month's last day (default day); `to` is always the last",
      }),
    ),
    ...filters,
  },
  { additionalProperties: false },
)
export type MrrQuery = Static<typeof MrrQuery>

export const SummaryQuery = Type.Object(
  { date: Day('The day summarised (YYYY-MM-DD, UTC), compared with 30 days before'), ...filters },
  { additionalProperties: false },
)
export type SummaryQuery = Static<typeof SummaryQuery>

const Movements = Type.Object(
  {
    new: Minor("MRR of companies having MRR for the first time (on plan_id's plan with the filter)"),
    expansion: Minor('MRR gained by companies whose MRR grew'),
    contraction: Minor('MRR lost by companies whose MRR fell but stayed above 0'),
    churn: Minor('MRR lost by companies whose MRR fell to 0'),
    reactivation: Minor('MRR of companies that had MRR before, then none, and have it again'),
  },
  { additionalProperties: false, description: 'Per company, between this point and the one before; minor units' },
)

const EXAMPLE_POINT = {
  date: '2027-03-31',
  mrr: 125_000,
  arr: 1_500_000,
  customers: 40,
  arpa: 3125,
  movements: { new: 9000, expansion: 2500, contraction: 1200, churn: 2990, reactivation: 0 },
  net_new_mrr: 7310,
}

export const MrrPoint = Type.Object(
  {
    date: Day('The state at the end of this day (UTC) by the business clock'),
    mrr: Minor('Monthly recurring revenue, minor units: active and non_renewing subscriptions, before tax'),
    arr: Minor('12 × mrr'),
    customers: Type.Integer({ description: 'Companies with MRR above 0' }),
    arpa: Minor('mrr ÷ customers, rounded half-up (0 when none)'),
    movements: Movements,
    net_new_mrr: Minor('mrr − the previous point’s mrr = new + expansion + reactivation − contraction − churn'),
  },
  { additionalProperties: false },
)

export const MrrSeries = Type.Object(
  {
    currency_code: Type.String({ description: 'The currency counted' }),
    interval: Type.Union([Type.Literal('day'), Type.Literal('week'), Type.Literal('month')]),
    points: Type.Array(MrrPoint, { maxItems: 1000 }),
  },
  {
    additionalProperties: false,
    title: 'MrrSeries',
    description: 'MRR and its movements at each point',
    examples: [{ currency_code: 'EUR', interval: 'month', points: [EXAMPLE_POINT] }],
  },
)

const Rate = (description: string) => Type.Union([Type.Number(), Type.Null()], { description })

export const RevenueSummary = Type.Object(
  {
    date: Day('The day summarised'),
    currency_code: Type.String({ description: 'The currency counted' }),
    mrr: Minor('MRR at the end of date'),
    arr: Minor('12 × mrr'),
    customers: Type.Integer({ description: 'Companies with MRR above 0' }),
    arpa: Minor('mrr ÷ customers, rounded half-up'),
    trials: Type.Integer({ description: 'Subscriptions in trial at the end of date' }),
    customer_churn_rate: Rate(
      'Companies with MRR 30 days before and none at date ÷ companies with MRR then (4 decimals; null when none)',
    ),
    revenue_churn_rate: Rate('Churn and contraction between the two days ÷ MRR 30 days before (null when 0)'),
    net_revenue_retention: Rate(
      'MRR at date of the companies that had MRR 30 days before ÷ their MRR then (null when 0)',
    ),
  },
  {
    additionalProperties: false,
    title: 'RevenueSummary',
    description: 'MRR, trials, churn and net revenue retention at a day',
    examples: [
      {
        date: '2027-03-31',
        currency_code: 'EUR',
        mrr: 125_000,
        arr: 1_500_000,
        customers: 40,
        arpa: 3125,
        trials: 6,
        customer_churn_rate: 0.0263,
        revenue_churn_rate: 0.0341,
        net_revenue_retention: 0.9882,
      },
    ],
  },
)
