import { Type } from 'typebox'
import { ErrorBody } from '../../http/schemas.ts'

export const ExportQuery = Type.Object(
  {
    month: Type.String({
      pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$',
      description: 'The month whose documents are exported, YYYY-MM (Italian calendar)',
      examples: ['2027-04'],
    }),
  },
  { additionalProperties: false },
)

/** The 200 of a FatturaPA route: the file itself, described for the OpenAPI document only. */
export const fileResponse = (description: string, mediaType: 'application/xml' | 'application/zip', name: string) => ({
  description,
  headers: { 'Content-Disposition': { type: 'string', description: `attachment; filename="${name}"` } },
  content: {
    [mediaType]: {
      schema: { type: 'string', format: 'binary' },
      example: mediaType === 'application/xml' ? XML_EXAMPLE : ZIP_EXAMPLE,
    },
  },
})

const XML_EXAMPLE =
  '<?xml version="1.0" encoding="UTF-8"?>\n<p:FatturaElettronica ' +
  'xmlns:p="http://ivaservizi.agenziaentrate.gov.it/docs/xsd/fatture/v1.2" versione="FPR12">…</p:FatturaElettronica>'

const ZIP_EXAMPLE = 'PK… (IT01234567890_0000A.xml, IT01234567890_0000B.xml, …)'

export const notItalian = {
  ...ErrorBody,
  description:
    'The service makes no FatturaPA documents: SELLER_COUNTRY is not IT, or the seller settings the format ' +
    'needs are empty (the sentence names them)',
}
