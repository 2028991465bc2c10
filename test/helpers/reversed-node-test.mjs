// node:test, with the tests and suites of each suite registered in reverse order (see reverse-order.mjs).
import * as real from 'node:test'

let buffer = null // the registrations of the suite being built; null at the top of a file

function register(kind, args) {
  if (kind === 'it') return real.it(...args)
  const at = args.findIndex((a) => typeof a === 'function')
  const build = args[at]
  const copy = [...args]
  copy[at] = function (...context) {
    const outer = buffer
    const mine = (buffer = [])
    try {
      build.apply(this, context)
    } finally {
      buffer = outer
    }
    for (const [k, rest] of mine.reverse()) register(k, rest)
  }
  return real.describe(...copy)
}

const deferred =
  (kind) =>
  (...args) => {
    if (buffer) buffer.push([kind, args])
    else return register(kind, args)
  }

export const describe = deferred('describe')
export const it = deferred('it')
export const test = it
export const suite = describe
export const { before, after, beforeEach, afterEach, mock } = real
export default real.default
