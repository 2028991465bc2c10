// Builds the server into a folder (dist/ unless given): src/server.ts and the npm packages it
// imports bundled by esbuild into one ES module, and the SQL migrations copied beside it
// (src/db/migrate.ts reads them from the folder next to the running module), and the operator's
// console built by Vite into console/ beside it (src/http/console.ts). `npm start` runs
// it before starting the server: plain `node` on one JavaScript file starts in a fraction of the
// time and memory of the TypeScript loader resolving and compiling hundreds of modules
// (docs/adr/0018-one-driver-and-a-bundled-start.md). Tests and tools run the sources through tsx;
// test/build.test.ts starts what this builds.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { buildConsole } from './build-console.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const outdir = path.resolve(root, process.argv[2] ?? 'dist')

fs.rmSync(outdir, { recursive: true, force: true })
await build({
  entryPoints: [path.join(root, 'src/server.ts')],
  outfile: path.join(outdir, 'server.js'),
  bundle: true,
  platform: 'node',
  target: 'node22.12',
  format: 'esm',
  external: [
    // Loaded only when used, from node_modules: PGlite finds its WebAssembly files beside its own
    // module; date-holidays is megabytes of calendars; chargebee (with zod) is 1.6 MB that only a
    // server configured for Chargebee loads (chargebee.sdk.ts); pg-native is optional. (/docs reads
    // swagger-ui-dist's files from node_modules at its first visit: nothing of it is imported.)
    // undici (the webhook sender's HTTP client) is loaded at an instance's first delivery; pdfkit
    // at the first PDF document, and it reads its fonts' metrics from its own folder.
    '@electric-sql/pglite',
    '@electric-sql/pglite/*',
    'date-holidays',
    'chargebee',
    'pg-native',
    'undici',
    'pdfkit',
  ],
  // CommonJS packages inside an ES module bundle call require() for Node's built-in modules.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  // Less to read and compile at every start; identifiers are kept, so stack traces keep the
  // functions' names, and the map is there for NODE_OPTIONS=--enable-source-maps.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: true,
  logLevel: 'warning',
})
fs.cpSync(path.join(root, 'src/db/migrations'), path.join(outdir, 'migrations'), { recursive: true })
await buildConsole(path.join(outdir, 'console'))
