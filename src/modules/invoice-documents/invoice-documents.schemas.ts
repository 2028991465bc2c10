import { Type } from 'typebox'
import { Uuid } from '../../http/schemas.ts'

export const CreditNoteParams = Type.Object({
  company_id: Uuid('The company'),
  credit_note_id: Uuid('The credit note'),
})

/** The 200 of a document route: the file itself, described for the OpenAPI document only. */
export const pdfResponse = (description: string) => ({
  description,
  headers: {
    'Content-Disposition': { type: 'string', description: 'inline; filename="<id>.pdf"' },
    'Content-Language': {
      type: 'string',
      description: "The document's language: it or en, from the company's country",
    },
  },
  content: { 'application/pdf': { schema: { type: 'string', format: 'binary' } } },
})
