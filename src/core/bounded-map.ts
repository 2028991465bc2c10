/**
 * A process's memory of what it worked out once (docs/architecture.md lists them): it keeps at
 * most `limit` entries, whatever clients send. Past it, a new key drops the one that came first
 * (a Map's own order), not the whole memory: emptied at once, every entry would be worked out
 * again together, and under load that is when it costs most. A key already kept is replaced in
 * place and drops nothing.
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
