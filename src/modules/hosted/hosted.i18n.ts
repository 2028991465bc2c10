import { currencyExponent, fromMinor } from '../../core/money.ts'
import { billingEn, billingIt } from './hosted.i18n-billing.ts'
// The hosted pages' languages, by Accept-Language's highest q-value we have; English when none matches.
export type Locale = 'en' | 'it'

export function localeOf(acceptLanguage: string | undefined): Locale {
  let best: { locale: Locale; q: number } = { locale: 'en', q: 0 }
  for (const part of (acceptLanguage ?? '').split(',')) {
    const [tag = '', ...params] = part.trim().toLowerCase().split(';')
    const q = Number(
      params
        .map((p) => p.trim())
        .find((p) => p.startsWith('q='))
        ?.slice(2) ?? '1',
    )
    const primary = tag.split('-')[0]
    const locale = primary === 'it' ? 'it' : primary === 'en' ? 'en' : undefined
    if (locale && Number.isFinite(q) && q > best.q) best = { locale, q }
  }
  return best.locale
}

const en = {
  'manager.title': 'Choose your plan',
  'manager.current': 'Current plan',
  'manager.plans': 'Plans of {product}',
  'manager.quantity': 'Number of users',
  'manager.estimate': 'See the cost of the change',
  'manager.leave': 'Leave without changes',
  'manager.estimateTitle': 'Cost of the change',
  'manager.confirm': 'Confirm the change',
  'manager.back': 'Choose another plan',
  'manager.newPlan': 'New plan: {plan}, {quantity} users',
  'period.month': 'per month',
  'period.year': 'per year',
  'pricing.flat_fee': 'flat fee',
  'pricing.tiered': 'each unit at its tier',
  'pricing.volume': 'every unit at the tier of the quantity',
  'pricing.stairstep': 'the price of the tier of the quantity',
  'invoice.description': 'Description',
  'invoice.quantity': 'Quantity',
  'invoice.amount': 'Amount',
  'invoice.subtotal': 'Subtotal',
  'invoice.discount': 'Discount',
  'invoice.reverseCharge': 'Reverse charge: VAT to be accounted for by the customer',
  'invoice.credits': 'Credit for the unused part of the current term',
  'invoice.due': 'Amount due',
  'invoice.nextBilling': 'Billed on {date}',
  'invoice.noNextBilling': 'No further billing is scheduled',
  'portal.title': 'Your subscription',
  'portal.plan': 'Plan',
  'portal.status': 'Status',
  'portal.quantity': 'Users',
  'portal.nextCharge': 'Next charge',
  'portal.noNextCharge': 'None scheduled',
  'portal.chargeOn': '{amount} on {date}',
  'portal.trialEnds': 'Trial ends',
  'portal.cancelsOn': 'Ends on',
  'portal.pausedSince': 'Paused since',
  'portal.pausesOn': 'Pauses on',
  'portal.resumesOn': 'Resumes on',
  'portal.changesOn': 'From {date}',
  'portal.card': 'Payment card',
  'portal.noCard': 'No card on file',
  'portal.cardText': '{brand} ending in {last4}, expires {month}/{year}',
  'portal.cancel': 'Cancel at the end of the term',
  'portal.undo': 'Undo the cancellation',
  'portal.logout': 'Log out',
  'portal.cancelled': 'Your subscription will end on {date}.',
  'portal.undone': 'The cancellation has been undone.',
  'status.future': 'Starting soon',
  'status.in_trial': 'In trial',
  'status.active': 'Active',
  'status.non_renewing': 'Ending at the end of the term',
  'status.paused': 'Paused',
  'status.cancelled': 'Cancelled',
  'payment.title': 'Add a payment card',
  'payment.testMode':
    "Test mode: no money is charged. Only the card's brand, last four digits and expiry are kept; " +
    'the number is never stored.',
  'payment.number': 'Card number',
  'payment.numberHint': '12 to 19 digits, spaces allowed',
  'payment.expiry': 'Expiry date',
  'payment.month': 'Month (1-12)',
  'payment.year': 'Year (YYYY)',
  'payment.save': 'Save the card',
  'payment.leave': 'Leave without saving',
  'payment.badNumber': 'The card number is not valid: check the digits.',
  'payment.badExpiry': 'The expiry date is not valid or has passed.',
  'payment.declined': 'The card was declined: use another card.',
  'payment.errors': 'The card was not saved.',
  'error.title': 'This page cannot be used',
  'error.expired': 'This link has expired. Ask for a new one from the application you came from.',
  'error.used': 'This link has already been used. Ask for a new one from the application you came from.',
  'error.notFound': 'This link is not valid. Check that you copied it whole, or ask for a new one.',
  'error.withdrawn':
    'This link has been withdrawn by the application that made it. Ask for a new one from the ' +
    'application you came from.',
  'error.disabled':
    'This page is not available: the account it belongs to is disabled. Contact the company that sent you the link.',
  'error.forbidden':
    'The form could not be verified (it may come from another site or an old tab). Reload the page and try again.',
  'error.conflict': 'This cannot be done now: {reason}',
  'error.invalid': 'The request is not valid: {reason}',
  'error.server': 'Something went wrong on our side. Try again in a moment.',
  footer: 'Secure page of your subscription. Do not share its address.',
  ...billingEn,
}

export type MessageKey = keyof typeof en

const it: Record<MessageKey, string> = {
  'manager.title': 'Scegli il tuo piano',
  'manager.current': 'Piano attuale',
  'manager.plans': 'Piani di {product}',
  'manager.quantity': 'Numero di utenti',
  'manager.estimate': 'Vedi il costo della modifica',
  'manager.leave': 'Esci senza modifiche',
  'manager.estimateTitle': 'Costo della modifica',
  'manager.confirm': 'Conferma la modifica',
  'manager.back': 'Scegli un altro piano',
  'manager.newPlan': 'Nuovo piano: {plan}, {quantity} utenti',
  'period.month': 'al mese',
  'period.year': "all'anno",
  'pricing.flat_fee': 'prezzo fisso',
  'pricing.tiered': 'ogni unità al prezzo della sua fascia',
  'pricing.volume': 'tutte le unità al prezzo della fascia della quantità',
  'pricing.stairstep': 'il prezzo della fascia della quantità',
  'invoice.description': 'Descrizione',
  'invoice.quantity': 'Quantità',
  'invoice.amount': 'Importo',
  'invoice.subtotal': 'Imponibile',
  'invoice.discount': 'Sconto',
  'invoice.reverseCharge': 'Inversione contabile: IVA a carico del cliente',
  'invoice.credits': 'Credito per la parte non usata del periodo in corso',
  'invoice.due': 'Importo dovuto',
  'invoice.nextBilling': 'Addebitato il {date}',
  'invoice.noNextBilling': 'Nessun altro addebito previsto',
  'portal.title': 'Il tuo abbonamento',
  'portal.plan': 'Piano',
  'portal.status': 'Stato',
  'portal.quantity': 'Utenti',
  'portal.nextCharge': 'Prossimo addebito',
  'portal.noNextCharge': 'Nessuno previsto',
  'portal.chargeOn': '{amount} il {date}',
  'portal.trialEnds': 'Fine della prova',
  'portal.cancelsOn': 'Termina il',
  'portal.pausedSince': 'In pausa dal',
  'portal.pausesOn': 'In pausa dal',
  'portal.resumesOn': 'Riprende il',
  'portal.changesOn': 'Dal {date}',
  'portal.card': 'Carta di pagamento',
  'portal.noCard': 'Nessuna carta registrata',
  'portal.cardText': '{brand} che termina con {last4}, scade il {month}/{year}',
  'portal.cancel': 'Disdici alla fine del periodo',
  'portal.undo': 'Annulla la disdetta',
  'portal.logout': 'Esci',
  'portal.cancelled': 'Il tuo abbonamento terminerà il {date}.',
  'portal.undone': 'La disdetta è stata annullata.',
  'status.future': 'In partenza',
  'status.in_trial': 'In prova',
  'status.active': 'Attivo',
  'status.non_renewing': 'Termina alla fine del periodo',
  'status.paused': 'In pausa',
  'status.cancelled': 'Disdetto',
  'payment.title': 'Aggiungi una carta di pagamento',
  'payment.testMode':
    'Modalità di prova: non viene addebitato nulla. Si conservano solo il circuito, le ultime ' +
    'quattro cifre e la scadenza della carta; il numero non viene mai salvato.',
  'payment.number': 'Numero della carta',
  'payment.numberHint': 'Da 12 a 19 cifre, spazi ammessi',
  'payment.expiry': 'Scadenza',
  'payment.month': 'Mese (1-12)',
  'payment.year': 'Anno (AAAA)',
  'payment.save': 'Salva la carta',
  'payment.leave': 'Esci senza salvare',
  'payment.badNumber': 'Il numero della carta non è valido: controlla le cifre.',
  'payment.badExpiry': 'La scadenza non è valida o è già passata.',
  'payment.declined': "La carta è stata rifiutata: usa un'altra carta.",
  'payment.errors': 'La carta non è stata salvata.',
  'error.title': 'Questa pagina non può essere usata',
  'error.expired': "Questo link è scaduto. Chiedine uno nuovo dall'applicazione da cui sei arrivato.",
  'error.used': "Questo link è già stato usato. Chiedine uno nuovo dall'applicazione da cui sei arrivato.",
  'error.notFound': 'Questo link non è valido. Controlla di averlo copiato per intero, o chiedine uno nuovo.',
  'error.withdrawn':
    "Questo link è stato ritirato dall'applicazione che lo ha creato. Chiedine uno nuovo " +
    "dall'applicazione da cui sei arrivato.",
  'error.disabled':
    "Questa pagina non è disponibile: l'account a cui appartiene è disattivato. Contatta l'azienda " +
    'che ti ha inviato il link.',
  'error.forbidden':
    'Non è stato possibile verificare il modulo (potrebbe venire da un altro sito o da una scheda ' +
    'vecchia). Ricarica la pagina e riprova.',
  'error.conflict': 'Non è possibile farlo ora: {reason}',
  'error.invalid': 'La richiesta non è valida: {reason}',
  'error.server': 'Qualcosa è andato storto da parte nostra. Riprova tra poco.',
  footer: "Pagina sicura del tuo abbonamento. Non condividerne l'indirizzo.",
  ...billingIt,
}

const messages: Record<Locale, Record<MessageKey, string>> = { en, it }

export type Translate = (key: MessageKey, values?: Record<string, string | number>) => string

/** Values are inserted as given: the HTML layer escapes the whole result. */
export function translator(locale: Locale): Translate {
  return (key, values = {}) =>
    messages[locale][key].replace(/\{(\w+)\}/g, (_, name: string) => String(values[name] ?? ''))
}

// Grouped from the thousands in Italian too (1.234,56 €, not CLDR's 1234,56 €), as invoices print them.
// The string value is ES2023's, which this project's TypeScript library target does not declare.
const GROUPED_ALWAYS = { useGrouping: 'always' } as unknown as Intl.NumberFormatOptions

/** With the currency's ISO 4217 decimals (2990 EUR → "€29.90"; 123456 EUR → "1.234,56 €" in Italian). */
export function formatMoney(locale: Locale, minor: number, currency: string): string {
  const digits = currencyExponent(currency)
  return new Intl.NumberFormat(locale === 'it' ? 'it-IT' : 'en-GB', {
    style: 'currency',
    currency,
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
    ...GROUPED_ALWAYS,
  }).format(fromMinor(minor, currency))
}

export function formatPercent(locale: Locale, percent: number): string {
  return new Intl.NumberFormat(locale === 'it' ? 'it-IT' : 'en-GB', {
    style: 'percent',
    maximumFractionDigits: 2,
  }).format(percent / 100)
}

export function countryName(locale: Locale, code: string): string {
  try {
    return new Intl.DisplayNames([locale === 'it' ? 'it-IT' : 'en-GB'], { type: 'region' }).of(code) ?? code
  } catch {
    return code
  }
}

/** In the company's time zone. */
export function formatDate(locale: Locale, unixSeconds: number, timeZone: string): string {
  return new Intl.DateTimeFormat(locale === 'it' ? 'it-IT' : 'en-GB', { dateStyle: 'long', timeZone }).format(
    new Date(unixSeconds * 1000),
  )
}
