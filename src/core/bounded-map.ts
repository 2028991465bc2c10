/**
 * A process's memory of what it worked out once, bounded whatever clients send: past `limit` a new
 * key drops the oldest one, not the whole map, which would make every entry be worked out again at once.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly limit: number) {
    super()
  }

  override set(key: K, value: V): this {
    if (this.size >= this.limit && !this.has(key)) this.delete(this.keys().next().value as K)
    return super.set(key, value)
  }
}

/** A BoundedMap's set: the keys alone. */
export class BoundedSet<T> extends Set<T> {
  constructor(readonly limit: number) {
    super()
  }

  override add(value: T): this {
    if (this.size >= this.limit && !this.has(value)) this.delete(this.values().next().value as T)
    return super.add(value)
  }
}
