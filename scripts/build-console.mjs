// Builds the operator's console (console/, docs/console.md) with Vite into a folder, and fails
// when its JavaScript is over the size budget. scripts/build.mjs calls it for what `npm start`
// serves; test/console.test.ts builds into console/dist, which the service reads when it runs
// from its sources.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

/** The console's JavaScript, gzipped, at most this many bytes in all. */
export const CONSOLE_SCRIPT_BUDGET = 300 * 1024

/** The gzipped size of every JavaScript file of a built console. */
export function consoleScriptBytes(folder) {
  let total = 0
  for (const entry of fs.readdirSync(folder, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith('.js')) {
      total += gzipSync(fs.readFileSync(path.join(entry.parentPath, entry.name)), { level: 9 }).length
    }
  }
  return total
}

export async function buildConsole(outDir = path.join(root, 'console/dist')) {
  const { build } = await import('vite')
  await build({
    configFile: path.join(root, 'console/vite.config.ts'),
    build: { outDir, emptyOutDir: true },
    logLevel: 'warn',
  })
  const bytes = consoleScriptBytes(outDir)
  if (bytes > CONSOLE_SCRIPT_BUDGET) {
    throw new Error(`the console's JavaScript is ${bytes} bytes gzipped, over its budget of ${CONSOLE_SCRIPT_BUDGET}`)
  }
  return { outDir, bytes }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { outDir, bytes } = await buildConsole(process.argv[2] && path.resolve(process.argv[2]))
  process.stdout.write(`Built the console into ${path.relative(root, outDir)}: ${bytes} bytes of gzipped JavaScript\n`)
}
