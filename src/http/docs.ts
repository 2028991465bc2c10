import { createReadStream } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import { API_TITLE } from './openapi.ts'

/**
 * The API reference page at /docs: Swagger UI's prebuilt bundle reading /openapi.json, every file
 * served here; nothing is fetched elsewhere, and a Content-Security-Policy holds the browser to that.
 */

const ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
  'swagger-ui.css': { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' },
  'favicon.png': { file: 'favicon-32x32.png', type: 'image/png' },
}

// A file, not inline, so the policy can forbid inline scripts. No validator badge; our license
// identifier has no spdx.org page, so its name is not linked. Authorize offers client credentials
// only: the other scheme is Chargebee's webhook Basic auth.
const START = `const licenseName = (system) => ({
  components: {
    OAS31License: ({ specSelectors }) =>
      system.React.createElement('div', { className: 'info__license' }, specSelectors.selectLicenseNameField()),
  },
});
const clientCredentialsOnly = () => ({
  statePlugins: {
    spec: {
      wrapSelectors: {
        securityDefinitions: (original) => (state, ...args) => {
          const schemes = original(...args);
          return schemes ? schemes.filter((_scheme, name) => name === 'oauth2') : schemes;
        },
      },
    },
  },
});
window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#reference',
  presets: [SwaggerUIBundle.presets.apis],
  plugins: [licenseName, clientCredentialsOnly],
  layout: 'BaseLayout',
  validatorUrl: null,
  deepLinking: true,
  filter: true,
  displayRequestDuration: true,
  persistAuthorization: false,
});
`

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${API_TITLE} — reference</title>
<link rel="icon" type="image/png" sizes="32x32" href="/docs/favicon.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<main id="reference"></main>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/start.js"></script>
</body>
</html>
`

// Swagger UI sets inline styles and draws icons as data: images; requests go to this service only.
const POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** The assets change only with the package's version, which comes with a restart. */
const CACHE = 'public, max-age=3600'

export function installDocs(app: FastifyInstance) {
  let folder: string | undefined
  const assetFolder = () =>
    (folder ??= path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')))

  app.route({
    method: 'GET',
    url: '/docs',
    schema: { hide: true },
    config: { access: 'none' },
    handler: async (_request, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('content-security-policy', POLICY)
        .send(PAGE),
  })
  app.route<{ Params: { file: string } }>({
    method: 'GET',
    url: '/docs/:file',
    schema: { hide: true },
    config: { access: 'none' },
    handler: async (request, reply) => {
      const { file } = request.params
      if (file === 'start.js')
        return reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(START)
      const asset = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined
      if (!asset) {
        reply.callNotFound()
        return reply
      }
      return reply
        .type(asset.type)
        .header('cache-control', CACHE)
        .send(createReadStream(path.join(assetFolder(), asset.file)))
    },
  })
}
