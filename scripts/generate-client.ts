// `npm run generate:client`: clients/typescript/schema.d.ts from the OpenAPI document, built
// in-process (no server). test/contract/client.test.ts fails when the committed file differs
// from a fresh generation.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript'
import { buildOpenApiDocument } from './openapi-document.ts'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const CLIENT_TYPES = path.join(root, 'clients/typescript/schema.d.ts')

/** The text of schema.d.ts for a document. */
export async function clientTypes(doc: Record<string, unknown>): Promise<string> {
  // structuredClone: openapi-typescript may annotate the object it walks. defaultNonNullable
  // off: a body field with a default (a product's `visible`) may be left out by the caller.
  const ast = await openapiTS(structuredClone(doc) as never, { alphabetize: false, defaultNonNullable: false })
  return `${COMMENT_HEADER.replace(' */', " * Regenerate with `npm run generate:client` (from the app's /openapi.json).\n */")}${astToString(ast)}`
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(CLIENT_TYPES, await clientTypes(await buildOpenApiDocument()))
  process.stdout.write(`Wrote ${path.relative(root, CLIENT_TYPES)}\n`)
}
