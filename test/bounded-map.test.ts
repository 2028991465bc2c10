import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { BoundedMap, BoundedSet } from '../src/core/bounded-map.ts'

describe('bounded memories (src/core/bounded-map.ts)', () => {
  it('a map keeps at most its limit: a new key drops the one set first, a kept key replaced drops nothing', () => {
    const map = new BoundedMap<string, number>(2)
    map.set('a', 1).set('b', 2)
    map.set('a', 10)
    assert.deepEqual(
      [...map],
      [
        ['a', 10],
        ['b', 2],
      ],
      'replacing a kept key drops nothing',
    )
    map.set('c', 3)
    assert.deepEqual(
      [...map],
      [
        ['b', 2],
        ['c', 3],
      ],
      'the first set went, not the whole map',
    )
    for (let i = 0; i < 100; i++) map.set(`k${i}`, i)
    assert.equal(map.size, 2)
    assert.deepEqual([...map.keys()], ['k98', 'k99'])
  })

  it('a set keeps at most its limit the same way', () => {
    const set = new BoundedSet<string>(2)
    set.add('a').add('b').add('a')
    assert.deepEqual([...set], ['a', 'b'])
    set.add('c')
    assert.deepEqual([...set], ['b', 'c'])
  })
})
