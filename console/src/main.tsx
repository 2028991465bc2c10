import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { signIn, signOut, signedIn, whenSignedOut } from './api.ts'
import { browserLang, I18n, type Lang, STRINGS, useT } from './i18n.ts'
import { ErrorNote, Field } from './ui.tsx'
import { Companies } from './pages/companies.tsx'
import { CompanyPage } from './pages/company.tsx'
import { Catalogue } from './pages/catalogue.tsx'
import { Dashboard } from './pages/dashboard.tsx'
import { TestClock, useTestClock } from './pages/test-clock.tsx'
import './style.css'

function useRoute() {
  const [hash, setHash] = useState(location.hash)
  useEffect(() => {
    const on = () => setHash(location.hash)
    addEventListener('hashchange', on)
    return () => removeEventListener('hashchange', on)
  }, [])
  return hash.replace(/^#\/?/, '')
}

function SignIn({ onIn }: { onIn: () => void }) {
  const { t } = useT()
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (e: Event) => {
    e.preventDefault()
    const form = new FormData(e.currentTarget as HTMLFormElement)
    setBusy(true)
    const message = await signIn(String(form.get('client_id')), String(form.get('client_secret')), t.networkError)
    setBusy(false)
    if (message) setError(message)
    else onIn()
  }
  return (
    <main class="signin">
      <h1>{t.title}</h1>
      <form onSubmit={submit}>
        <p class="muted">{t.signInHelp}</p>
        <Field label={t.clientId}>
          <input name="client_id" autocomplete="username" required />
        </Field>
        <Field label={t.clientSecret}>
          <input name="client_secret" type="password" autocomplete="current-password" required />
        </Field>
        <ErrorNote message={error} />
        <button type="submit" class="primary" disabled={busy}>
          {t.signIn}
        </button>
      </form>
    </main>
  )
}

function Shell({ route }: { route: string }) {
  const { t } = useT()
  const clock = useTestClock()
  const [section, id] = route.split('/')
  const page =
    section === 'companies' && id ? (
      <CompanyPage id={decodeURIComponent(id)} />
    ) : section === 'companies' ? (
      <Companies />
    ) : section === 'catalogue' ? (
      <Catalogue />
    ) : section === 'clock' && clock ? (
      <TestClock />
    ) : (
      <Dashboard />
    )
  const link = (href: string, label: string, current: boolean) => (
    <a href={`#/${href}`} aria-current={current ? 'page' : undefined}>
      {label}
    </a>
  )
  return (
    <>
      <nav aria-label={t.title}>
        {link('dashboard', t.dashboard, !section || section === 'dashboard')}
        {link('companies', t.companies, section === 'companies')}
        {link('catalogue', t.catalogue, section === 'catalogue')}
        {clock && link('clock', t.testClock, section === 'clock')}
        <button type="button" onClick={signOut}>
          {t.signOut}
        </button>
      </nav>
      <main>{page}</main>
    </>
  )
}

function App() {
  const [lang, setLang] = useState<Lang>(browserLang())
  const [inside, setInside] = useState(signedIn())
  const route = useRoute()
  const t = STRINGS[lang]
  useEffect(() => whenSignedOut(() => setInside(false)), [])
  useEffect(() => {
    document.documentElement.lang = lang
    document.title = `${t.title} — Company Administration API`
  }, [lang])
  return (
    <I18n.Provider value={{ t, lang }}>
      <header>
        <span class="brand">Company Administration API</span>
        <label class="lang">
          <span>{t.language}</span>
          <select value={lang} onChange={(e) => setLang((e.currentTarget as HTMLSelectElement).value as Lang)}>
            <option value="en">English</option>
            <option value="it">Italiano</option>
          </select>
        </label>
      </header>
      {inside ? <Shell route={route} /> : <SignIn onIn={() => setInside(true)} />}
    </I18n.Provider>
  )
}

render(<App />, document.getElementById('app')!)
