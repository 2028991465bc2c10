import SerializerSelector from '@fastify/fast-json-stringify-compiler'

/**
 * Validators and serializers compile at first use, not at start, where compiling every route was a
 * large share of start-up CPU. `compileAll()` lets a test prove every schema compiles.
 */
export function createLazyCompilers() {
  const pending = new Set<() => void>()

  type Compiled<R> = ((data: unknown) => R) & { errors?: unknown }

  function lazily<R>(compile: () => Compiled<R>): Compiled<R> {
    let compiled: Compiled<R> | undefined
    const ensure = () => {
      if (compiled) return compiled
      compiled = compile()
      pending.delete(ensure)
      return compiled
    }
    pending.add(ensure)
    // Fastify reads a failed validation's errors from the function it called.
    const wrapper: Compiled<R> = (data) => {
      const fn = ensure()
      const result = fn(data)
      wrapper.errors = fn.errors
      return result
    }
    return wrapper
  }

  const serializers = SerializerSelector()

  return {
    lazily,
    /** Fastify's `schemaController.compilersFactory.buildSerializer`: its default one, deferred. */
    buildSerializer(externalSchemas: unknown, options: Parameters<typeof serializers>[1]) {
      const compile = serializers(externalSchemas, options)
      return (route: Parameters<typeof compile>[0]) => lazily(() => compile(route))
    },
    /** Compiles what no request has used yet; returns how many it compiled. */
    compileAll(): number {
      const left = [...pending]
      for (const ensure of left) ensure()
      return left.length
    },
  }
}

export type LazyCompilers = ReturnType<typeof createLazyCompilers>
