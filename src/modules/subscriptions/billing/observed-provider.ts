import type { BillingProvider } from './provider.ts'

/** Told of every call a provider answered or refused: its name, the operation, seconds, and whether it failed. */
export type ProviderObserver = (provider: string, operation: string, seconds: number, failed: boolean) => void

/**
 * The provider with each of its operations timed for the metrics (latency and errors by provider
 * and operation): a Chargebee that slows down or refuses shows there before integrators complain.
 */
export function observedProvider<P extends BillingProvider>(provider: P, observe: ProviderObserver): P {
  const wrapped: Record<string, unknown> = { name: provider.name }
  for (const key of Object.keys(provider) as Array<keyof P & string>) {
    const value = provider[key]
    if (typeof value !== 'function') { wrapped[key] = value; continue }
    // A synchronous operation (atTrialEnd, atTermEnd) stays synchronous: its callers use the value
    // at once, and a promise in its place would read as a state with every field missing.
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
        (answer) => { observe(provider.name, key, seconds(), false); return answer },
        (err: unknown) => { observe(provider.name, key, seconds(), true); throw err },
      )
    }
  }
  return wrapped as unknown as P
}
