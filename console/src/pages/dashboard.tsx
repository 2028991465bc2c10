import { useEffect, useRef, useState } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { api, call, type Result, type Schemas } from '../api.ts'
import { decimals, money, price, useT } from '../i18n.ts'
import { ErrorNote, Field, Loading } from '../ui.tsx'

export type MrrSeries = Schemas['MrrSeries']
export type Summary = Schemas['RevenueSummary']
type Movements = MrrSeries['points'][number]['movements']

const day = (d: Date) => d.toISOString().slice(0, 10)
const MOVES: (keyof Movements)[] = ['new', 'expansion', 'reactivation', 'contraction', 'churn']
const COLOURS = ['#1b7f3b', '#4a90d9', '#8e6cc4', '#d98f2b', '#c0392b']

export function Dashboard() {
  const { t } = useT()
  const today = new Date()
  const [range, setRange] = useState({
    from: day(new Date(Date.UTC(today.getUTCFullYear() - 1, today.getUTCMonth(), 1))),
    to: day(today),
    interval: 'month' as MrrSeries['interval'],
  })
  const [form, setForm] = useState(range)
  const [series, setSeries] = useState<Result<MrrSeries> | null>(null)
  const [summary, setSummary] = useState<Result<Summary> | null>(null)
  useEffect(() => {
    setSeries(null)
    setSummary(null)
    call(api.GET('/api/v1/analytics/mrr', { params: { query: range } }), t.networkError).then(setSeries)
    call(api.GET('/api/v1/analytics/summary', { params: { query: { date: range.to } } }), t.networkError).then(
      setSummary,
    )
  }, [range])

  return (
    <>
      <h1>{t.dashboard}</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault()
          setRange(form)
        }}
      >
        <Field label={t.from}>
          <input type="date" value={form.from} onInput={(e) => setForm({ ...form, from: e.currentTarget.value })} />
        </Field>
        <Field label={t.to}>
          <input type="date" value={form.to} onInput={(e) => setForm({ ...form, to: e.currentTarget.value })} />
        </Field>
        <Field label={t.interval}>
          <select
            value={form.interval}
            onChange={(e) => setForm({ ...form, interval: e.currentTarget.value as MrrSeries['interval'] })}
          >
            <option value="day">{t.day}</option>
            <option value="week">{t.week}</option>
            <option value="month">{t.month}</option>
          </select>
        </Field>
        <button type="submit" class="primary">
          {t.show}
        </button>
      </form>
      {!summary && <Loading />}
      {summary && !summary.ok && <ErrorNote message={summary.message} />}
      <SummaryCards summary={summary?.ok ? summary.data : null} />
      {!series && <Loading />}
      {series && !series.ok && <ErrorNote message={series.message} />}
      <MrrCharts series={series?.ok ? series.data : null} />
    </>
  )
}

const pct = (v: number | null | undefined) => (v == null ? '—' : `${(v * 100).toFixed(1)} %`)

/** The summary's figures; dashes until it has loaded (the page's skeleton). */
export function SummaryCards({ summary: s }: { summary: Summary | null }) {
  const { t, lang } = useT()
  const m = (v: number | undefined) => (s ? money(v, s.currency_code, lang) : '—')
  const cards: [string, string][] = [
    [t.mrr, m(s?.mrr)],
    [t.arr, m(s?.arr)],
    [t.customers, s ? String(s.customers) : '—'],
    [t.arpa, m(s?.arpa)],
    [t.trials, s ? String(s.trials) : '—'],
    [t.customerChurn, pct(s?.customer_churn_rate)],
    [t.revenueChurn, pct(s?.revenue_churn_rate)],
    [t.netRetention, pct(s?.net_revenue_retention)],
  ]
  return (
    <dl class="cards">
      {cards.map(([label, value]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  )
}

/** A uPlot chart, drawn again only when `deps` change (not at each render of the page). */
function Chart(props: {
  label: string
  options: (width: number) => uPlot.Options
  data: uPlot.AlignedData
  deps: unknown[]
}) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (!box.current) return
    const plot = new uPlot(props.options(box.current.clientWidth || 600), props.data, box.current)
    return () => plot.destroy()
  }, props.deps)
  return <figure class="chart" role="img" aria-label={props.label} ref={box} />
}

/** MRR over the range, and its five movements per point as bars (contraction and churn below zero). */
export function MrrCharts({ series }: { series: MrrSeries | null }) {
  const { t, lang } = useT()
  if (!series) return <div class="chart skeleton" aria-hidden="true" />
  const currency = series.currency_code
  const xs = series.points.map((p) => Date.parse(`${p.date}T00:00:00Z`) / 1000)
  const major = (v: number) => v / 10 ** decimals(series.currency_code)
  const axisMoney = (_u: uPlot, vals: number[]) => vals.map((v) => price(v, series.currency_code, lang))
  const base = (width: number, title: string): uPlot.Options => ({
    title,
    width,
    height: 260,
    series: [{}],
    axes: [{}, { values: axisMoney, size: 90 }],
  })
  return (
    <>
      <Chart
        label={`${t.mrr}: ${series.points.map((p) => `${p.date} ${money(p.mrr, currency, lang)}`).join(', ')}`}
        deps={[series, lang]}
        data={[xs, series.points.map((p) => major(p.mrr))]}
        options={(w) => ({ ...base(w, t.mrr), series: [{}, { label: t.mrr, stroke: '#1f5fa8', width: 2 }] })}
      />
      <Chart
        label={t.movements}
        deps={[series, lang]}
        data={[
          xs,
          ...MOVES.map((k) =>
            series.points.map((p) => major(k === 'churn' || k === 'contraction' ? -p.movements[k] : p.movements[k])),
          ),
        ]}
        options={(w) => ({
          ...base(w, t.movements),
          series: [
            {},
            ...MOVES.map((k, i) => ({
              label: k,
              stroke: COLOURS[i],
              fill: COLOURS[i],
              paths: uPlot.paths.bars!({ size: [0.8 / MOVES.length, 40], align: 0 }),
            })),
          ],
        })}
      />
    </>
  )
}
