import { create } from 'xmlbuilder2'
import { todayIn } from '../../core/days.ts'
import { currencyExponent } from '../../core/money.ts'
import type { Company } from '../companies/companies.schemas.ts'
import type { OfflinePaymentMethod } from '../../db/tables.ts'
import { documentLines, summaries, type Figures } from './fatturapa.lines.ts'

/** A FatturaPA 1.2.2 document (FPR12, to businesses), built as a tree by an XML library. */

const NAMESPACE = 'http://ivaservizi.agenziaentrate.gov.it/docs/xsd/fatture/v1.2'
/** Dates are the Italian calendar's: the seller files in Italy. */
const ZONE = 'Europe/Rome'

export interface FatturapaSeller {
  name: string
  vatNumber: string
  taxCode: string
  street: string
  zip: string
  city: string
  province: string
  taxRegime: string
}

export type Buyer = Pick<
  Company,
  'name' | 'address' | 'city' | 'province' | 'zip' | 'country' | 'vat_number' | 'tax_code' | 'sdi_code' | 'pec'
>

export interface DocumentInput {
  kind: 'invoice' | 'credit_note'
  id: string
  /** Numero: the document's progressive, in decimal. */
  number: string
  /** ProgressivoInvio: the progressive as in the file name. */
  transmission: string
  date: Date
  figures: Figures
  period?: { start: Date; end: Date }
  /** A credit note's invoice. */
  reference?: { number: string; date: Date; id: string } | null
  payment?: { method: OfflinePaymentMethod | 'card'; due: Date; amount: number }
}

/** What the format needs of the company and it lacks, as its fields are named. */
export function missingBuyerFields(b: Buyer): string[] {
  const italian = b.country === 'IT'
  const missing: string[] = []
  if (!b.address?.trim()) missing.push('address')
  if (!b.city?.trim()) missing.push('city')
  if (italian && !/^\d{5}$/.test(b.zip ?? '')) missing.push('zip')
  if (italian && !/^[A-Za-z]{2}$/.test(b.province ?? '')) missing.push('province')
  if (italian && !b.vat_number && !b.tax_code) missing.push('vat_number or tax_code')
  if (italian && !b.sdi_code && !b.pec) missing.push('sdi_code or pec')
  return missing
}

// Latin letters without a decomposition to a Latin-1 base.
const LETTERS: Readonly<Record<string, string>> = { Ł: 'L', ł: 'l', Đ: 'D', đ: 'd', Œ: 'OE', œ: 'oe', Ħ: 'H', ħ: 'h' }

// The format takes Latin-1 text only: accents a reader can drop are dropped, anything else is "?".
function latin(text: string, max: number): string {
  const plain = [...text.normalize('NFKC')]
    .map((c) => (c.codePointAt(0)! <= 0xff ? c : (LETTERS[c] ?? c.normalize('NFD').replace(/[\u0300-\u036f]/g, ''))))
    .map((c) => (c.codePointAt(0)! <= 0xff ? c : '?'))
    .join('')
    .replace(/\s+/g, ' ')
    .trim()
  return [...plain].slice(0, max).join('')
}

const day = (at: Date) => todayIn(ZONE, at)

/** An integer of `decimals` places written with a dot. */
function decimal(scaled: bigint, decimals: number): string {
  const sign = scaled < 0n ? '-' : ''
  const digits = (scaled < 0n ? -scaled : scaled).toString().padStart(decimals + 1, '0')
  return `${sign}${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`
}

/** Minor units as the format writes amounts: a dot and at least two decimals. */
function amount(minor: number, currency: string): string {
  const exponent = currencyExponent(currency)
  const decimals = Math.max(2, exponent)
  return decimal(BigInt(minor) * 10n ** BigInt(decimals - exponent), decimals)
}

/** amount ÷ quantity with up to 8 decimals (at least 2), rounded half-up. */
function unitPrice(minor: number, quantity: number, currency: string): string {
  const q = BigInt(Math.max(1, quantity))
  const num = BigInt(minor) * 10n ** BigInt(8 - currencyExponent(currency))
  const scaled = (num * 2n + (num < 0n ? -q : q)) / (2n * q)
  return decimal(scaled, 8).replace(/(\.\d\d\d*?)0+$/, '$1')
}

const rate = (bp: number) => (bp / 100).toFixed(2)

const PAYMENT_METHODS: Record<OfflinePaymentMethod | 'card', string> = {
  card: 'MP08',
  bank_transfer: 'MP05',
  cash: 'MP01',
  check: 'MP02',
  other: 'MP08',
}

/** IdFiscaleIVA of a VAT number written with its country prefix (EL for Greece). */
function fiscalId(vatNumber: string, country: string) {
  const prefix = vatNumber.slice(0, 2)
  const code = /^[A-Z]{2}$/.test(prefix) && (prefix === country || prefix === 'EL') ? vatNumber.slice(2) : vatNumber
  return { IdPaese: country, IdCodice: code.slice(0, 28) }
}

function buyerNode(b: Buyer) {
  const italian = b.country === 'IT'
  // The exchange system's placeholders for a customer abroad without a VAT number, and its post code.
  const vat = b.vat_number
    ? fiscalId(b.vat_number, b.country)
    : italian
      ? undefined
      : fiscalId('99999999999', b.country)
  return {
    DatiAnagrafici: {
      ...(vat ? { IdFiscaleIVA: vat } : {}),
      ...(italian && b.tax_code ? { CodiceFiscale: b.tax_code } : {}),
      Anagrafica: { Denominazione: latin(b.name, 80) },
    },
    Sede: {
      Indirizzo: latin(b.address ?? '', 60),
      CAP: italian ? b.zip! : '00000',
      Comune: latin(b.city ?? '', 60),
      ...(italian ? { Provincia: b.province!.toUpperCase() } : {}),
      Nazione: b.country,
    },
  }
}

function sellerNode(s: FatturapaSeller) {
  return {
    DatiAnagrafici: {
      IdFiscaleIVA: fiscalId(s.vatNumber, 'IT'),
      CodiceFiscale: s.taxCode,
      Anagrafica: { Denominazione: latin(s.name, 80) },
      RegimeFiscale: s.taxRegime,
    },
    Sede: {
      Indirizzo: latin(s.street, 60),
      CAP: s.zip,
      Comune: latin(s.city, 60),
      Provincia: s.province,
      Nazione: 'IT',
    },
  }
}

/** The document's XML text. */
export function fatturapaXml(seller: FatturapaSeller, buyer: Buyer, doc: DocumentInput): string {
  const currency = doc.figures.currency_code
  const money = (minor: number) => amount(minor, currency)
  const lines = documentLines(doc.figures)
  const italian = buyer.country === 'IT'
  const recipient = !italian ? 'XXXXXXX' : (buyer.sdi_code ?? '0000000')
  const kindWord = doc.kind === 'invoice' ? 'Fattura' : 'Nota di credito'
  const tree = {
    'p:FatturaElettronica': {
      '@xmlns:p': NAMESPACE,
      '@versione': 'FPR12',
      FatturaElettronicaHeader: {
        DatiTrasmissione: {
          IdTrasmittente: fiscalId(seller.vatNumber, 'IT'),
          ProgressivoInvio: doc.transmission,
          FormatoTrasmissione: 'FPR12',
          CodiceDestinatario: recipient,
          ...(italian && recipient === '0000000' && buyer.pec ? { PECDestinatario: buyer.pec } : {}),
        },
        CedentePrestatore: sellerNode(seller),
        CessionarioCommittente: buyerNode(buyer),
      },
      FatturaElettronicaBody: {
        DatiGenerali: {
          DatiGeneraliDocumento: {
            TipoDocumento: doc.kind === 'invoice' ? 'TD01' : 'TD04',
            Divisa: currency,
            Data: day(doc.date),
            Numero: doc.number,
            ImportoTotaleDocumento: money(doc.figures.total),
            Causale: latin(`${kindWord} ${doc.id}`, 200),
          },
          ...(doc.reference
            ? { DatiFattureCollegate: { IdDocumento: doc.reference.number, Data: day(doc.reference.date) } }
            : {}),
        },
        DatiBeniServizi: {
          DettaglioLinee: lines.map((l, i) => ({
            NumeroLinea: String(i + 1),
            Descrizione: latin(l.line.description || l.line.entity_id || '-', 1000) || '-',
            Quantita: `${Math.max(1, l.line.quantity)}.00`,
            ...(doc.period ? { DataInizioPeriodo: day(doc.period.start), DataFinePeriodo: day(doc.period.end) } : {}),
            PrezzoUnitario: unitPrice(l.line.amount, l.line.quantity, currency),
            ...(l.discount !== 0 ? { ScontoMaggiorazione: { Tipo: 'SC', Importo: money(l.discount) } } : {}),
            PrezzoTotale: money(l.taxable),
            AliquotaIVA: rate(l.rate_bp),
            ...(l.nature ? { Natura: l.nature.code } : {}),
          })),
          DatiRiepilogo: summaries(doc.figures, lines).map((s) => ({
            AliquotaIVA: rate(s.rate_bp),
            ...(s.nature ? { Natura: s.nature.code } : {}),
            ImponibileImporto: money(s.taxable),
            Imposta: money(s.tax),
            EsigibilitaIVA: 'I',
            ...(s.nature ? { RiferimentoNormativo: latin(s.nature.law, 100) } : {}),
          })),
        },
        ...(doc.payment
          ? {
              DatiPagamento: {
                CondizioniPagamento: 'TP02',
                DettaglioPagamento: {
                  ModalitaPagamento: PAYMENT_METHODS[doc.payment.method],
                  DataScadenzaPagamento: day(doc.payment.due),
                  ImportoPagamento: money(doc.payment.amount),
                },
              },
            }
          : {}),
      },
    },
  }
  return create({ version: '1.0', encoding: 'UTF-8' }, tree).end({ prettyPrint: true })
}
