import { createContext } from 'preact'
import { useContext } from 'preact/hooks'

export type Lang = 'en' | 'it'

const en = {
  title: 'Console',
  signIn: 'Sign in',
  signOut: 'Sign out',
  clientId: 'Client id',
  clientSecret: 'Client secret',
  signInHelp: "A platform client's id and secret. The token stays in this tab's memory only.",
  language: 'Language',
  dashboard: 'Dashboard',
  companies: 'Companies',
  catalogue: 'Catalogue',
  testClock: 'Test clock',
  search: 'Search',
  searchHint: 'Part of the name',
  status: 'Subscription status',
  state: 'Status',
  any: 'Any',
  disabledFilter: 'Disabled',
  yes: 'Yes',
  no: 'No',
  loading: 'Loading…',
  more: 'Load more',
  none: 'Nothing here.',
  name: 'Name',
  plan: 'Plan',
  quantity: 'Quantity',
  country: 'Country',
  address: 'Address',
  details: 'Details',
  contracts: 'Contracts',
  teams: 'Teams',
  subscription: 'Subscription',
  invoices: 'Invoices',
  creditNotes: 'Credit notes',
  events: 'Events',
  clients: 'Clients',
  webhookEndpoints: 'Webhook endpoints',
  deliveries: 'Deliveries',
  showDeliveries: 'Show deliveries',
  actions: 'Actions',
  date: 'Date',
  total: 'Total',
  due: 'Due',
  pdf: 'PDF',
  documents: 'Documents',
  taxCode: 'Tax code',
  sdiCode: 'SDI code',
  type: 'Type',
  id: 'Id',
  url: 'URL',
  scopes: 'Scopes',
  enabled: 'Enabled',
  disabled: 'Disabled',
  back: 'All companies',
  cancel: 'Cancel',
  confirm: 'Confirm',
  close: 'Close',
  done: 'Done.',
  recordPayment: 'Record payment',
  voidInvoice: 'Void',
  writeOff: 'Write off',
  refund: 'Refund',
  creditNote: 'Credit note',
  changePlan: 'Change plan',
  cancelSubscription: 'Cancel subscription',
  pause: 'Pause',
  resume: 'Resume',
  promotionalCredits: 'Promotional credits',
  scheduledChange: 'Scheduled change',
  oneOffCharge: 'One-off charge',
  disableCompany: 'Disable company',
  enableCompany: 'Enable company',
  amount: 'Amount',
  method: 'Payment method',
  reference: 'Reference',
  reason: 'Reason',
  comment: 'Comment',
  description: 'Description',
  endOfTerm: 'At the end of the term',
  immediately: 'Immediately',
  timing: 'When',
  showEstimate: 'Show the estimate',
  estimate: 'Estimate',
  add: 'Add',
  deduct: 'Deduct',
  invoiceNow: 'Invoice now',
  confirmRecordPayment: (amount: string, id: string) =>
    `Records an offline payment of ${amount} on invoice ${id}: ` +
    'its amount due falls, and it is paid when nothing remains due.',
  confirmVoid: (id: string) =>
    `Voids invoice ${id}: nothing more is due on it and dunning stops. This cannot be undone.`,
  confirmWriteOff: (id: string) =>
    `Writes off what is due on invoice ${id}: it becomes paid with nothing collected. This cannot be undone.`,
  confirmRefund: (amount: string, id: string) => `Refunds ${amount} of invoice ${id} as a refundable credit note.`,
  confirmCreditNote: (amount: string, id: string) => `Issues a credit note of ${amount} against invoice ${id}.`,
  confirmChangePlan: (plan: string, qty: number, atTermEnd: boolean): string =>
    atTermEnd
      ? `Schedules ${plan} × ${qty} for the end of the term: nothing is billed now; the renewal bills it.`
      : `Changes the subscription to ${plan} × ${qty} now, billed as the estimate above shows.`,
  confirmCancel: (endOfTerm: boolean): string =>
    endOfTerm
      ? 'Cancels the subscription at the end of its term: it renews no more.'
      : 'Cancels the subscription now: its plan features are withdrawn.',
  confirmPause: 'Pauses the subscription: no invoices, plan features withdrawn until it resumes.',
  confirmResume: 'Resumes the subscription now, with a new term billed today.',
  confirmCredits: (amount: string, add: boolean) =>
    add ? `Adds ${amount} of promotional credits.` : `Deducts ${amount} of promotional credits.`,
  confirmCharge: (amount: string, now: boolean) =>
    now
      ? `Charges ${amount} now, on an invoice of its own.`
      : `Adds a charge of ${amount} to the next renewal invoice.`,
  confirmDisable: (name: string) => `Disables ${name}: its clients' tokens are refused until it is enabled again.`,
  confirmEnable: (name: string) => `Enables ${name} again.`,
  networkError: 'The service could not be reached.',
  mrr: 'MRR',
  arr: 'ARR',
  customers: 'Customers',
  arpa: 'ARPA',
  trials: 'Trials',
  customerChurn: 'Customer churn',
  revenueChurn: 'Revenue churn',
  netRetention: 'Net revenue retention',
  movements: 'MRR movements',
  from: 'From',
  to: 'To',
  interval: 'Interval',
  day: 'Day',
  week: 'Week',
  month: 'Month',
  show: 'Show',
  now: 'Business time now',
  advanceTo: 'Advance to',
  advance: 'Advance',
  confirmAdvance: (to: string) =>
    `Moves the business clock to ${to}: every renewal, dunning step and job due by then runs.`,
  plans: 'Plans',
  products: 'Products',
  addons: 'Add-ons',
  coupons: 'Coupons',
  price: 'Price',
  period: 'Period',
}

export type Strings = typeof en

const it: Strings = {
  ...en,
  title: 'Console',
  signIn: 'Accedi',
  signOut: 'Esci',
  clientId: 'Id del client',
  clientSecret: 'Segreto del client',
  signInHelp: 'Id e segreto di un client della piattaforma. Il token resta solo nella memoria di questa scheda.',
  language: 'Lingua',
  dashboard: 'Cruscotto',
  companies: 'Aziende',
  catalogue: 'Catalogo',
  testClock: 'Orologio di prova',
  search: 'Cerca',
  searchHint: 'Parte del nome',
  status: 'Stato abbonamento',
  state: 'Stato',
  any: 'Tutti',
  disabledFilter: 'Disattivata',
  yes: 'Sì',
  no: 'No',
  loading: 'Caricamento…',
  more: 'Carica altri',
  none: 'Niente da mostrare.',
  name: 'Nome',
  plan: 'Piano',
  quantity: 'Quantità',
  country: 'Paese',
  address: 'Indirizzo',
  documents: 'Documenti',
  taxCode: 'Codice fiscale',
  sdiCode: 'Codice destinatario SDI',
  details: 'Dati',
  contracts: 'Contratti',
  teams: 'Team',
  subscription: 'Abbonamento',
  invoices: 'Fatture',
  creditNotes: 'Note di credito',
  events: 'Eventi',
  clients: 'Client',
  webhookEndpoints: 'Endpoint webhook',
  deliveries: 'Consegne',
  showDeliveries: 'Mostra consegne',
  actions: 'Azioni',
  date: 'Data',
  total: 'Totale',
  due: 'Da pagare',
  type: 'Tipo',
  enabled: 'Attiva',
  disabled: 'Disattivata',
  back: 'Tutte le aziende',
  cancel: 'Annulla',
  confirm: 'Conferma',
  close: 'Chiudi',
  done: 'Fatto.',
  recordPayment: 'Registra pagamento',
  voidInvoice: 'Annulla fattura',
  writeOff: 'Stralcia',
  refund: 'Rimborsa',
  creditNote: 'Nota di credito',
  changePlan: 'Cambia piano',
  cancelSubscription: 'Disdici abbonamento',
  pause: 'Sospendi',
  resume: 'Riprendi',
  promotionalCredits: 'Crediti promozionali',
  scheduledChange: 'Modifica programmata',
  oneOffCharge: 'Addebito una tantum',
  disableCompany: 'Disattiva azienda',
  enableCompany: 'Riattiva azienda',
  amount: 'Importo',
  method: 'Metodo di pagamento',
  reference: 'Riferimento',
  reason: 'Motivo',
  comment: 'Commento',
  description: 'Descrizione',
  endOfTerm: 'Alla fine del periodo',
  immediately: 'Subito',
  timing: 'Quando',
  showEstimate: 'Mostra il preventivo',
  estimate: 'Preventivo',
  add: 'Aggiungi',
  deduct: 'Togli',
  invoiceNow: 'Fattura subito',
  confirmRecordPayment: (amount, id) =>
    `Registra un pagamento di ${amount} sulla fattura ${id}: ` +
    'il dovuto scende, e la fattura è pagata quando non resta nulla.',
  confirmVoid: (id) =>
    `Annulla la fattura ${id}: non è più dovuta e i solleciti si fermano. Non si può tornare indietro.`,
  confirmWriteOff: (id) =>
    `Stralcia il dovuto della fattura ${id}: risulta pagata senza incasso. Non si può tornare indietro.`,
  confirmRefund: (amount, id) => `Rimborsa ${amount} della fattura ${id} con una nota di credito rimborsabile.`,
  confirmCreditNote: (amount, id) => `Emette una nota di credito di ${amount} sulla fattura ${id}.`,
  confirmChangePlan: (plan, qty, atTermEnd) =>
    atTermEnd
      ? `Programma ${plan} × ${qty} per la fine del periodo: nulla è fatturato ora; lo fattura il rinnovo.`
      : `Passa l'abbonamento a ${plan} × ${qty} ora, fatturato come nel preventivo sopra.`,
  confirmCancel: (endOfTerm) =>
    endOfTerm
      ? "Disdice l'abbonamento alla fine del periodo: non si rinnova più."
      : "Disdice l'abbonamento ora: le funzioni del piano vengono tolte.",
  confirmPause: "Sospende l'abbonamento: nessuna fattura, funzioni del piano tolte fino alla ripresa.",
  confirmResume: "Riprende l'abbonamento ora, con un nuovo periodo fatturato oggi.",
  confirmCredits: (amount, add) =>
    add ? `Aggiunge ${amount} di crediti promozionali.` : `Toglie ${amount} di crediti promozionali.`,
  confirmCharge: (amount, now) =>
    now ? `Addebita ${amount} ora, con una fattura a sé.` : `Aggiunge ${amount} alla prossima fattura di rinnovo.`,
  confirmDisable: (name) => `Disattiva ${name}: i token dei suoi client sono rifiutati finché non è riattivata.`,
  confirmEnable: (name) => `Riattiva ${name}.`,
  networkError: 'Il servizio non risponde.',
  customers: 'Clienti',
  trials: 'In prova',
  customerChurn: 'Abbandono clienti',
  revenueChurn: 'Abbandono ricavi',
  netRetention: 'Ritenzione netta dei ricavi',
  movements: 'Movimenti MRR',
  from: 'Dal',
  to: 'Al',
  interval: 'Intervallo',
  day: 'Giorno',
  week: 'Settimana',
  month: 'Mese',
  show: 'Mostra',
  now: 'Ora del servizio',
  advanceTo: 'Porta a',
  advance: 'Avanza',
  confirmAdvance: (to) =>
    `Porta l'orologio a ${to}: rinnovi, solleciti e lavori previsti fino ad allora vengono eseguiti.`,
  plans: 'Piani',
  products: 'Prodotti',
  addons: 'Add-on',
  coupons: 'Coupon',
  price: 'Prezzo',
  period: 'Periodo',
}

export const STRINGS: Record<Lang, Strings> = { en, it }

export const browserLang = (): Lang => (navigator.language.toLowerCase().startsWith('it') ? 'it' : 'en')

export const I18n = createContext<{ t: Strings; lang: Lang }>({ t: en, lang: 'en' })
export const useT = () => useContext(I18n)

const locale = (lang: Lang) => (lang === 'it' ? 'it-IT' : 'en-GB')

/** The decimals of a currency (ISO 4217: EUR 2, JPY 0, KWD 3). */
export const decimals = (currency: string) =>
  new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2

/** Major units (a catalogue price) as money in the page's language. */
export function price(major: number | null | undefined, currency: string | null | undefined, lang: Lang): string {
  if (major == null) return '—'
  return new Intl.NumberFormat(locale(lang), { style: 'currency', currency: currency || 'EUR' }).format(major)
}

/** Minor units (the API's amounts) as money in the page's language. */
export function money(minor: number | null | undefined, currency: string | null | undefined, lang: Lang): string {
  if (minor == null) return '—'
  return price(minor / 10 ** decimals(currency || 'EUR'), currency, lang)
}

/** Unix seconds or an ISO string as a date and time in the page's language. */
export function when(value: number | string | null | undefined, lang: Lang): string {
  if (value == null || value === '') return '—'
  const d = typeof value === 'number' ? new Date(value * 1000) : new Date(value)
  return d.toLocaleString(locale(lang), { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' })
}
