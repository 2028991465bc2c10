/**
 * `node --import tsx --import ./test/helpers/reverse-order.mjs --test <files>`: runs the tests of
 * every suite in reverse order (nested suites too), to show that no test depends on what an
 * earlier one left (data, the clock, a started scheduler). Node 20's runner has no shuffle; this
 * hook hands the test files a node:test whose describe/it register their children backwards.
 */
import { register } from 'node:module'
import { isMainThread } from 'node:worker_threads'

const wrapper = new URL('./reversed-node-test.mjs', import.meta.url).href

// Loaded again in the loader's own thread as the hook: registered from the main thread only.
if (isMainThread) register(import.meta.url)

/** Loader hook: a test file's `node:test` is the wrapper (which itself imports the real one). */
export async function resolve(specifier, context, next) {
  if (
    specifier === 'node:test' &&
    context.parentURL &&
    context.parentURL !== wrapper &&
    !context.parentURL.includes('/node_modules/')
  ) {
    return { url: wrapper, shortCircuit: true }
  }
  return next(specifier, context)
}
