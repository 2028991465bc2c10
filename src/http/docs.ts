import { createReadStream } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import { API_TITLE } from './openapi.ts'

/**
 * The API reference page at /docs: Swagger UI's prebuilt browser bundle (swagger-ui-dist), reading
 * /openapi.json, every file served by this service. Nothing is fetched from elsewhere (no fonts,
 * no validator badge, no analytics), and a Content-Security-Policy holds the browser to that.
 * Why Swagger UI and not Scalar: docs/decisions.md, "The API reference page".
 */

/** The files of swagger-ui-dist the page uses, by the name it asks for them, with their type. */
const ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
  'swagger-ui.css': { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' },
  'favicon.png': { file: 'favicon-32x32.png', type: 'image/png' },
}

// Our own start-up script, a file rather than inline so the policy can forbid inline scripts.
// validatorUrl: null, else Swagger UI shows a badge loaded from validator.swagger.io. The
// document's license is an identifier of our own (LicenseRef-Proprietary), which Swagger UI would
// link to spdx.org, where no such page exists: its name is shown, not linked. The Authorize dialog
// offers the client-credentials flow only: the document's other scheme is the HTTP Basic that
// Chargebee sends to its webhook, which no integrator authorizes with.
const START = `const licenseName = (system) => ({
  components: {
    OAS31License: ({ specSelectors }) => system.React.createElement('div', { className: 'info__license' }, specSelectors.selectLicenseNameField()),
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

// Swagger UI sets inline styles and draws icons as data: images; requests ("Try it out", the
// token form) go to this service only.
const POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
  "connect-src 'self'", "form-action 'self'", "base-uri 'none'", "frame-ancestors 'none'",
].join('; ')

/** The assets change only with the package's version, which a deployment changes with a restart. */
const CACHE = 'public, max-age=3600'

export function installDocs(app: FastifyInstance) {
  // Resolved at the first visit: a service that never shows /docs never looks for the package.
  let folder: string | undefined
  const assetFolder = () => (folder ??= path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')))

  app.route({
    method: 'GET', url: '/docs', schema: { hide: true }, config: { access: 'none' },
    handler: async (_request, reply) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache')
      .header('content-security-policy', POLICY).send(PAGE),
  })
  app.route<{ Params: { file: string } }>({
    method: 'GET', url: '/docs/:file', schema: { hide: true }, config: { access: 'none' },
    handler: async (request, reply) => {
      const { file } = request.params
      if (file === 'start.js') return reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(START)
      const asset = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined
      if (!asset) { reply.callNotFound(); return reply }
      return reply.type(asset.type).header('cache-control', CACHE).send(createReadStream(path.join(assetFolder(), asset.file)))
    },
  })
}
