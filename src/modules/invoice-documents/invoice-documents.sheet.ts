/**
 * A4 pages drawn with pdfkit's standard fonts (Helvetica): no font file to ship, and WinAnsi covers
 * Italian and the euro sign. The few drawing moves the documents need: a heading with its facts,
 * two parties side by side, a table that breaks across pages, totals, paragraphs, page numbers.
 */

const A4 = { width: 595.28, height: 841.89 }
const MARGIN = { left: 42, right: 42, top: 46, bottom: 60 }
const RIGHT = A4.width - MARGIN.right
const BOTTOM = A4.height - MARGIN.bottom
const WIDTH = RIGHT - MARGIN.left
const GREY = '#44474e'
const RULE = '#c4c7cf'
const SIZE = 9

// WinAnsi's characters outside Latin-1 (its 0x80–0x9F); anything else would print as a wrong glyph.
const WIN_ANSI_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ')
const fits = (c: string) => {
  const code = c.codePointAt(0)!
  return (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRA.has(c)
}

// Letters that Unicode does not decompose into a base letter and an accent.
const BASE_LETTERS: Record<string, string> = { ł: 'l', Ł: 'L', đ: 'd', Đ: 'D', ħ: 'h', Ħ: 'H', ı: 'i', ŀ: 'l', Ŀ: 'L' }

/** Text the standard fonts can print: accents kept where WinAnsi has them, dropped otherwise, "?" for the rest. */
export function printable(text: string): string {
  let out = ''
  const plain = text
    .normalize('NFC')
    .replace(/[\t\r\n]+/g, ' ')
    .replace(/[\u2000-\u200b\u202f\u205f]/g, ' ')
    .replace(/\u2212/g, '-')
  for (const c of plain) {
    if (fits(c)) out += c
    else {
      const bare = BASE_LETTERS[c] ?? c.normalize('NFD').replace(/\p{M}/gu, '')
      out += bare.length > 0 && [...bare].every(fits) ? bare : '?'
    }
  }
  return out
}

export interface Column {
  header: string
  width: number
  align?: 'left' | 'right'
}
export interface Cell {
  text: string
  note?: string
}

export interface PartyBlock {
  heading: string
  name: string
  lines: string[]
}

export interface SheetInfo {
  title: string
  author: string
  subject: string
  created: Date
  language: string
}

export interface Sheet {
  /** The document's title, and its facts (label, value) on the right. */
  heading(title: string, facts: Array<[string, string]>): void
  parties(left: PartyBlock, right: PartyBlock): void
  /** Rows break across pages, each new page repeating the header. */
  table(columns: Column[], rows: Cell[][]): void
  /** Right half of the page, label and amount; `strong` rows bold with a rule above. */
  totals(rows: Array<{ label: string; amount: string; strong?: boolean }>): void
  section(heading: string): void
  paragraph(text: string, options?: { bold?: boolean; grey?: boolean }): void
  /** Numbers the pages ("Page 1 of 2") and answers the file. */
  finish(pageLabel: (page: number, pages: number) => string): Promise<Buffer>
}

export async function createSheet(info: SheetInfo): Promise<Sheet> {
  const { default: PDFDocument } = await import('pdfkit')
  const doc: PDFKit.PDFDocument = new PDFDocument({
    size: 'A4',
    margins: MARGIN,
    bufferPages: true,
    lang: info.language,
    displayTitle: true,
    info: {
      Title: printable(info.title),
      Author: printable(info.author),
      Subject: printable(info.subject),
      CreationDate: info.created,
      ModDate: info.created,
    },
  })
  const chunks: Buffer[] = []
  doc.on('data', (chunk: Buffer) => chunks.push(chunk))
  const ended = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)))
    doc.on('error', reject)
  })
  let y = MARGIN.top

  const font = (bold = false, size = SIZE, color = '#111111') =>
    doc
      .font(bold ? 'Helvetica-Bold' : 'Helvetica')
      .fontSize(size)
      .fillColor(color)
  const heightOf = (text: string, width: number) => doc.heightOfString(printable(text), { width })
  const write = (text: string, x: number, top: number, width: number, align: 'left' | 'right' = 'left') =>
    doc.text(printable(text), x, top, { width, align, lineBreak: true })
  const rule = (top: number, from = MARGIN.left, to = RIGHT, color = RULE, weight = 0.6) =>
    doc.moveTo(from, top).lineTo(to, top).lineWidth(weight).strokeColor(color).stroke()
  const room = (height: number) => {
    if (y + height <= BOTTOM) return false
    doc.addPage()
    y = MARGIN.top
    return true
  }

  return {
    heading(title, facts) {
      font(true, 22)
      write(title, MARGIN.left, y, WIDTH / 2)
      const labelX = MARGIN.left + WIDTH * 0.42
      const valueX = labelX + 105
      let factY = y + 2
      for (const [label, value] of facts) {
        font(true)
        write(label, labelX, factY, 100)
        font()
        const h = Math.max(heightOf(value, RIGHT - valueX), SIZE + 2)
        write(value, valueX, factY, RIGHT - valueX)
        factY += h + 2
      }
      y = Math.max(factY, y + 30) + 6
      rule(y, MARGIN.left, RIGHT, '#111111', 1.5)
      y += 14
    },

    parties(left, right) {
      const half = WIDTH / 2 - 12
      const block = (x: number, p: PartyBlock) => {
        let top = y
        font(true, 8, GREY)
        write(p.heading.toUpperCase(), x, top, half)
        top += 13
        if (p.name) {
          font(true, 10)
          write(p.name, x, top, half)
          top += heightOf(p.name, half) + 2
        }
        font()
        for (const line of p.lines) {
          write(line, x, top, half)
          top += heightOf(line, half) + 1
        }
        return top
      }
      y = Math.max(block(MARGIN.left, left), block(MARGIN.left + WIDTH / 2 + 12, right)) + 16
    },

    table(columns, rows) {
      const xs = columns.map((_, i) => MARGIN.left + columns.slice(0, i).reduce((sum, c) => sum + c.width, 0))
      const cellHeight = (cell: Cell, i: number) => {
        const width = columns[i]!.width - 6
        return heightOf(cell.text, width) + (cell.note ? heightOf(cell.note, width) + 1 : 0)
      }
      const header = () => {
        font(true, 8.5)
        const h = Math.max(...columns.map((c) => heightOf(c.header, c.width - 6)))
        columns.forEach((c, i) => {
          write(c.header, xs[i]! + 3, y, c.width - 6, c.align)
        })
        y += h + 3
        rule(y, MARGIN.left, RIGHT, '#111111', 1)
        y += 4
      }
      room(40)
      header()
      for (const row of rows) {
        font()
        const h = Math.max(...row.map(cellHeight))
        if (room(h + 6)) header()
        row.forEach((cell, i) => {
          const c = columns[i]!
          font()
          write(cell.text, xs[i]! + 3, y, c.width - 6, c.align)
          if (cell.note) {
            font(false, 8, GREY)
            write(cell.note, xs[i]! + 3, y + heightOf(cell.text, c.width - 6) + 1, c.width - 6, c.align)
          }
        })
        y += h + 3
        rule(y)
        y += 4
      }
      y += 8
    },

    totals(rows) {
      const x = MARGIN.left + WIDTH * 0.45
      const labelWidth = WIDTH * 0.55 - 100
      for (const r of rows) {
        font(r.strong)
        const h = heightOf(r.label, labelWidth) + 4
        room(h + 4)
        if (r.strong) rule(y - 2, x, RIGHT, '#111111', 1)
        write(r.label, x + 3, y + 1, labelWidth)
        write(r.amount, RIGHT - 97, y + 1, 94, 'right')
        y += h + 2
      }
      y += 10
    },

    section(heading) {
      room(48)
      y += 6
      font(true, 10)
      write(heading, MARGIN.left, y, WIDTH)
      y += heightOf(heading, WIDTH) + 6
    },

    paragraph(text, options = {}) {
      font(options.bold, options.grey ? 8.5 : SIZE, options.grey ? GREY : '#111111')
      const h = heightOf(text, WIDTH)
      room(h)
      write(text, MARGIN.left, y, WIDTH)
      y += h + 5
    },

    async finish(pageLabel) {
      const { start, count } = doc.bufferedPageRange()
      for (let i = start; i < start + count; i++) {
        doc.switchToPage(i)
        font(false, 8, GREY)
        // Below the bottom margin: pdfkit would otherwise open a new page for it.
        doc.page.margins.bottom = 0
        write(pageLabel(i - start + 1, count), MARGIN.left, A4.height - 36, WIDTH, 'right')
      }
      doc.end()
      return ended
    },
  }
}
