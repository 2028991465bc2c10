import type { BillingProvider } from './billing.provider.ts'

export type ProviderObserver = (provider: string, operation: string, seconds: number, failed: boolean) => void

// Each operation timed for the metrics, so a slowing Chargebee shows there before integrators complain.
export function observedProvider<P extends BillingProvider>(provider: P, observe: ProviderObserver): P {
  const wrapped: Record<string, unknown> = { name: provider.name }
  for (const key of Object.keys(provider) as Array<keyof P & string>) {
    const value = provider[key]
    if (typeof value !== 'function') {
      wrapped[key] = value
      continue
    }
    // A synchronous operation stays synchronous: its callers use the value at once.
    wrapped[key] = (...args: unknown[]) => {
      const started = process.hrtime.bigint()
      const seconds = () => Number(process.hrtime.bigint() - started) / 1e9
      let result: unknown
      try {
        result = (value as (...a: unknown[]) => unknown).apply(provider, args)
      } catch (err) {
        observe(provider.name, key, seconds(), true)
        throw err
      }
      if (!(result instanceof Promise)) {
        observe(provider.name, key, seconds(), false)
        return result
      }
      return result.then(
        (answer) => {
          observe(provider.name, key, seconds(), false)
          return answer
        },
        (err: unknown) => {
          observe(provider.name, key, seconds(), true)
          throw err
        },
      )
    }
  }
  return wrapped as unknown as P
}
