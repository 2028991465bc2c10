import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply } from 'fastify'

/**
 * The operator's console at /console (docs/console.md): Vite's build, from dist/console beside the bundled
 * server or console/dist when run from sources. The page calls the API of this origin only; the CSP holds it there.
 */

const here = path.dirname(fileURLToPath(import.meta.url))
const FOLDERS = [path.join(here, 'console'), path.resolve(here, '../../console/dist')]

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
}

// No inline script or style element; the charts and the framework set styles through the DOM.
export const CONSOLE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

interface Built {
  folder: string
  /** Asset file name → its content type; Vite names them after their content, so they never change. */
  assets: Map<string, string>
}

function findBuilt(): Built | null {
  const folder = FOLDERS.find((f) => fs.existsSync(path.join(f, 'index.html')))
  if (!folder) return null
  const assets = new Map<string, string>()
  const dir = path.join(folder, 'assets')
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const type = TYPES[path.extname(name)]
    if (type) assets.set(name, type)
  }
  return { folder, assets }
}

export function installConsole(app: FastifyInstance) {
  let built: Built | null | undefined
  // Read at the first visit; until it is built, looked for again at each.
  const current = () => (built ??= findBuilt())

  const page = async (_request: unknown, reply: FastifyReply) => {
    const found = current()
    reply.header('content-security-policy', CONSOLE_POLICY).header('cache-control', 'no-cache')
    if (!found) {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build` (or `node scripts/build-console.mjs`).\n')
    }
    return reply
      .type('text/html; charset=utf-8')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(fs.createReadStream(path.join(found.folder, 'index.html')))
  }
  app.route({ method: 'GET', url: '/console', schema: { hide: true }, config: { access: 'none' }, handler: page })
  app.route<{ Params: { file: string } }>({
    method: 'GET',
    url: '/console/assets/:file',
    schema: { hide: true },
    config: { access: 'none' },
    handler: async (request, reply) => {
      const type = current()?.assets.get(request.params.file)
      if (!type) {
        reply.callNotFound()
        return reply
      }
      return reply
        .type(type)
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('x-content-type-options', 'nosniff')
        .send(fs.createReadStream(path.join(current()!.folder, 'assets', request.params.file)))
    },
  })
}
