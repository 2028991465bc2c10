import { useEffect, useState } from 'preact/hooks'
import { untyped } from '../api.ts'
import { useT, when } from '../i18n.ts'
import { ConfirmDialog, ErrorNote, Field, Loading, useLoad } from '../ui.tsx'

/** GET /api/v1/test_clock: documented only where the service enables it, so typed here. */
export interface TestClockState {
  object: 'test_clock'
  now: string
  offset_seconds: number
}

/** Whether the service has a test clock (the route exists only when TEST_CLOCK_ENABLED). */
export function useTestClock(): boolean {
  const [on, setOn] = useState(false)
  useEffect(() => {
    untyped<TestClockState>('GET', '/api/v1/test_clock', undefined, '').then((r) => setOn(r.ok))
  }, [])
  return on
}

export function TestClock() {
  const { t, lang } = useT()
  const clock = useLoad(() => untyped<TestClockState>('GET', '/api/v1/test_clock', undefined, t.networkError), [])
  const [to, setTo] = useState('')
  const [asking, setAsking] = useState(false)
  const target = to ? `${to}:00Z` : ''
  return (
    <>
      <h1>{t.testClock}</h1>
      {clock.loading && <Loading />}
      <ErrorNote message={clock.error} />
      {clock.data && (
        <dl class="facts">
          <dt>{t.now}</dt>
          <dd>{when(clock.data.now, lang)} UTC</dd>
        </dl>
      )}
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault()
          if (target) setAsking(true)
        }}
      >
        <Field label={`${t.advanceTo} (UTC)`}>
          <input type="datetime-local" value={to} required onInput={(e) => setTo(e.currentTarget.value)} />
        </Field>
        <button type="submit" class="primary">
          {t.advance}
        </button>
      </form>
      {asking && (
        <ConfirmDialog
          title={t.testClock}
          consequence={t.confirmAdvance(`${when(target, lang)} UTC`)}
          onClose={(done) => {
            setAsking(false)
            if (done) clock.reload()
          }}
          run={() => untyped('POST', '/api/v1/test_clock/advance', { to: target }, t.networkError)}
        />
      )}
    </>
  )
}
