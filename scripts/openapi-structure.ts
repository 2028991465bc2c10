// The structural parts of the OpenAPI document: paths, methods, parameters, request and response
// schemas, status codes, security. Descriptions, summaries, titles, examples and `info` are left
// out, so prose may change while test/contract/openapi-unchanged.test.ts holds the shape fixed.
// `node --import tsx scripts/openapi-structure.ts` rewrites test/contract/openapi-structure.json.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildOpenApiDocument } from './openapi-document.ts'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const OPENAPI_STRUCTURE = path.join(root, 'test/contract/openapi-structure.json')

/** Keys that annotate rather than shape; removed everywhere except where they name a field. */
const ANNOTATIONS = new Set(['description', 'summary', 'title', 'example', 'examples', 'externalDocs', '$comment'])
/** Maps whose keys are field names, so `description` there is a property, not prose. */
const NAME_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions'])

function strip(value: unknown, namesHere = false): unknown {
  if (Array.isArray(value)) return value.map((item) => strip(item))
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) {
    if (!namesHere && (ANNOTATIONS.has(key) || key.startsWith('x-'))) continue
    out[key] = strip((value as Record<string, unknown>)[key], !namesHere && NAME_MAPS.has(key))
  }
  return out
}

/** The document without its prose, keys sorted. */
export function openapiStructure(doc: Record<string, unknown>): Record<string, unknown> {
  const { info: _info, ...rest } = doc
  return strip(rest) as Record<string, unknown>
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(OPENAPI_STRUCTURE, `${JSON.stringify(openapiStructure(await buildOpenApiDocument()), null, 2)}\n`)
  process.stdout.write(`Wrote ${path.relative(root, OPENAPI_STRUCTURE)}\n`)
}
