import path from 'node:path'
import { defineConfig } from 'vite'

// `npx vite console` serves it with reloads while the API runs on :8080 (docs/console.md).
const api = process.env.CONSOLE_API ?? 'http://127.0.0.1:8080'

export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: path.join(import.meta.dirname, 'dist'),
    target: 'es2022',
    // The polyfill would be an inline script, which the Content-Security-Policy forbids.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: { proxy: { '/api': api, '/oauth': api, '/openapi.json': api } },
})
