import type { CompiledQuery, Kysely } from 'kysely'

/**
 * A query Kysely builds and compiles once, then runs with new values: building costs a hot read as
 * much CPU as the rest of its request. `build` gets placeholders once, so every argument must reach
 * the SQL as a parameter (constants belong in the SQL text).
 */
interface Compiles<R> {
  compile(db: Kysely<any>): CompiledQuery<R>
}

export function prepared<A extends unknown[], R>(db: Kysely<any>, build: (...args: A) => Compiles<R>) {
  let compiled: { template: CompiledQuery<R>; slots: number[] } | undefined

  function compile(count: number) {
    const marks = Array.from({ length: count }, (_, i) => `\u0000arg${i}\u0000`)
    const template = build(...(marks as unknown as A)).compile(db)
    const slots = template.parameters.map((value) => {
      const slot = marks.indexOf(value as string)
      if (slot < 0) throw new Error(`prepared(): a parameter of "${template.sql}" is not an argument`)
      return slot
    })
    return { template, slots }
  }

  return async (...args: A): Promise<R[]> => {
    compiled ??= compile(args.length)
    const { template, slots } = compiled
    const result = await db.executeQuery<R>({ ...template, parameters: slots.map((slot) => args[slot]) })
    return result.rows
  }
}
