import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { writeBatches } from '../src/db/write-batches.ts'

/** The batching of writes (src/db/write-batches.ts) on its own; the teams tests run it on both engines. */
describe('write batches', () => {
  /** A `run` that records its batches and answers each item doubled once `release` is called. */
  function recorder() {
    const batches: number[][] = []
    const pending: Array<() => void> = []
    let running = 0
    let mostRunning = 0
    const run = async (items: number[]) => {
      batches.push(items)
      mostRunning = Math.max(mostRunning, ++running)
      await new Promise<void>((resolve) => pending.push(resolve))
      running--
      return items.map((i) => i * 2)
    }
    const turn = () => new Promise((resolve) => setImmediate(resolve))
    const releaseAll = async () => {
      await turn()
      while (pending.length > 0) {
        for (const resolve of pending.splice(0)) resolve()
        await turn()
      }
    }
    return { run, batches, releaseAll, mostRunning: () => mostRunning }
  }

  it('sends a lone item at once, and what arrives while batches run as the next batches', async () => {
    const r = recorder()
    const write = writeBatches(r.run, { name: 'test', maxItems: 3, maxInFlight: 1 })
    const first = write(1)
    await new Promise((resolve) => setImmediate(resolve))
    assert.deepEqual(r.batches, [[1]])
    const later = [2, 3, 4, 5].map((i) => write(i))
    await r.releaseAll()
    assert.deepEqual(await Promise.all([first, ...later]), [2, 4, 6, 8, 10])
    assert.deepEqual(r.batches, [[1], [2, 3, 4], [5]])
    assert.equal(r.mostRunning(), 1)
  })

  it('runs at most maxInFlight batches at once', async () => {
    const r = recorder()
    const write = writeBatches(r.run, { name: 'test', maxItems: 2, maxInFlight: 2 })
    const all = Promise.all(Array.from({ length: 9 }, (_, i) => write(i)))
    await r.releaseAll()
    assert.deepEqual(
      await all,
      Array.from({ length: 9 }, (_, i) => i * 2),
    )
    assert.equal(r.mostRunning(), 2)
    assert.ok(r.batches.every((b) => b.length <= 2))
  })

  it('runs a batch that fails as a whole again item by item, so an error reaches only its own item', async () => {
    const batches: number[][] = []
    const observed: string[] = []
    const write = writeBatches(
      async (items: number[]) => {
        batches.push(items)
        if (items.includes(13)) throw new Error('thirteen')
        return items.map(String)
      },
      {
        name: 'test',
        maxItems: 10,
        maxInFlight: 1,
        observer: (name, items, outcome) => observed.push(`${name} ${items} ${outcome}`),
      },
    )
    const outcomes = await Promise.allSettled([12, 13, 14].map((i) => write(i)))
    assert.deepEqual(
      outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message)),
      ['12', 'thirteen', '14'],
    )
    assert.deepEqual(batches, [[12, 13, 14], [12], [13], [14]])
    assert.deepEqual(observed, ['test 3 failed', 'test 1 written', 'test 1 failed', 'test 1 written'])
  })

  it('gives every item its outcome even when the observer throws', async () => {
    const observer = () => {
      throw new Error('metrics down')
    }
    const write = writeBatches(
      async (items: number[]) => {
        if (items.includes(13)) throw new Error('thirteen')
        return items
      },
      { name: 'test', maxItems: 10, maxInFlight: 1, observer },
    )
    const outcomes = await Promise.allSettled([12, 13, 14].map((i) => write(i)))
    assert.deepEqual(
      outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message)),
      [12, 'thirteen', 14],
    )
    assert.deepEqual(await Promise.all([write(1), write(2)]), [1, 2])
  })

  it('fails every item of a batch whose answer does not have one outcome per item', async () => {
    const write = writeBatches(async (items: number[]) => (items.length > 1 ? [1] : items), {
      name: 'test',
      maxItems: 10,
      maxInFlight: 1,
    })
    assert.deepEqual(await Promise.all([write(7), write(8)]), [7, 8])
    const broken = writeBatches(async () => [], { name: 'test', maxItems: 10, maxInFlight: 1 })
    await assert.rejects(broken(1), /answered 0 outcomes/)
  })
})
