import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import type { Result } from './api.ts'
import { useT } from './i18n.ts'

export function ErrorNote({ message }: { message: string | null | undefined }) {
  return message ? (
    <p class="error" role="alert">
      {message}
    </p>
  ) : null
}

export function Loading() {
  const { t } = useT()
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {t.loading}
    </p>
  )
}

/** One call's answer, loaded when its inputs change. */
export function useLoad<T>(load: () => Promise<Result<T>>, inputs: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true })
  const [round, setRound] = useState(0)
  useEffect(() => {
    let live = true
    setState((s) => ({ ...s, loading: true, error: undefined }))
    load().then((r) => {
      if (live) setState(r.ok ? { data: r.data, loading: false } : { error: r.message, loading: false })
    })
    return () => {
      live = false
    }
  }, [...inputs, round])
  return { ...state, reload: () => setRound((n) => n + 1) }
}

export interface Column<T> {
  label: string
  cell: (row: T) => ComponentChildren
}

/** A list paged with the API's cursors: the first page, then "Load more" while the Link header names one. */
export function PagedTable<T>(props: {
  caption: string
  /** Shown above the table; else the caption is read by screen readers only (a heading names it). */
  showCaption?: boolean
  columns: Column<T>[]
  load: (cursor: string | undefined) => Promise<Result<T[]>>
  inputs?: unknown[]
  rowKey: (row: T) => string
}) {
  const { t } = useT()
  const [rows, setRows] = useState<T[]>([])
  const [next, setNext] = useState<string | null>(null)
  const [loading, setLoading] = useState(true)
  const [error, setError] = useState<string | null>(null)
  const generation = useRef(0)

  const fetchPage = async (cursor: string | undefined, replace: boolean) => {
    const mine = ++generation.current
    setLoading(true)
    setError(null)
    const r = await props.load(cursor)
    if (mine !== generation.current) return
    setLoading(false)
    if (!r.ok) return setError(r.message)
    setRows((old) => (replace ? r.data : [...old, ...r.data]))
    setNext(r.next)
  }
  useEffect(() => {
    setRows([])
    fetchPage(undefined, true)
  }, props.inputs ?? [])

  return (
    <div class="table-wrap" aria-busy={loading}>
      <table>
        <caption class={props.showCaption ? undefined : 'visually-hidden'}>{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th scope="col" key={c.label}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map((c) => (
                <td key={c.label}>{c.cell(row)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {!loading && !error && rows.length === 0 && <p class="muted">{t.none}</p>}
      {loading && <Loading />}
      <ErrorNote message={error} />
      {next && !loading && (
        <button type="button" onClick={() => fetchPage(next, false)}>
          {t.more}
        </button>
      )}
    </div>
  )
}

/**
 * A confirmation: says what will happen, runs the action on Confirm, shows the API's sentence
 * when it fails, and closes (calling `onDone`) when it succeeds. A native modal dialog, so the
 * keyboard and screen readers get focus trapping and Escape.
 */
export function ConfirmDialog(props: {
  title: string
  children?: ComponentChildren
  /** What will happen, in one sentence; null while the form is not ready (Confirm disabled). */
  consequence: string | null
  run: () => Promise<Result<unknown>>
  onClose: (done: boolean) => void
}) {
  const { t } = useT()
  const ref = useRef<HTMLDialogElement>(null)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    ref.current?.showModal()
  }, [])
  const confirm = async () => {
    setBusy(true)
    setError(null)
    const r = await props.run()
    setBusy(false)
    if (r.ok) {
      ref.current?.close()
      props.onClose(true)
    } else setError(r.message)
  }
  return (
    <dialog ref={ref} aria-labelledby="dialog-title" onClose={() => props.onClose(false)}>
      <h2 id="dialog-title">{props.title}</h2>
      {props.children}
      {props.consequence && <p class="consequence">{props.consequence}</p>}
      <ErrorNote message={error} />
      <div class="buttons">
        <button type="button" onClick={() => ref.current?.close()}>
          {t.cancel}
        </button>
        <button type="button" class="primary" disabled={busy || !props.consequence} onClick={confirm}>
          {busy ? t.loading : t.confirm}
        </button>
      </div>
    </dialog>
  )
}

export function Field(props: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the control is the child passed in
    <label class="field">
      <span>{props.label}</span>
      {props.children}
    </label>
  )
}

export function Section(props: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section aria-labelledby={props.id}>
      <h2 id={props.id}>{props.title}</h2>
      {props.children}
    </section>
  )
}
