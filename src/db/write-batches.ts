import { inRequestTransaction, outsideRequestScope } from './request-transaction.ts'

/**
 * Writes that arrive together share one statement and one commit; each item gets its own outcome.
 * Nothing waits for a batch to fill. A batch that fails whole is rerun item by item, so an error
 * reaches only its own request.
 */
export interface WriteBatchOptions {
  name: string
  maxItems: number
  /** Each batch holds a pool connection while it runs. */
  maxInFlight: number
  observer?: WriteBatchObserver
}

export type WriteBatchObserver = (name: string, items: number, outcome: 'written' | 'failed') => void

interface Waiting<I, O> {
  item: I
  resolve: (outcome: O) => void
  reject: (err: unknown) => void
}

export function writeBatches<I, O>(
  run: (items: I[]) => Promise<O[]>,
  options: WriteBatchOptions,
): (item: I) => Promise<O> {
  const queue: Waiting<I, O>[] = []
  let inFlight = 0
  let scheduled = false

  async function runBatch(batch: Waiting<I, O>[]) {
    let outcomes: O[]
    try {
      outcomes = await run(batch.map((w) => w.item))
      if (outcomes.length !== batch.length)
        throw new Error(`A write batch of ${batch.length} answered ${outcomes.length} outcomes`)
    } catch (err) {
      observe(batch.length, 'failed')
      if (batch.length === 1) return batch[0]!.reject(err)
      // One at a time, so a failed batch does not become a burst of statements.
      for (const waiting of batch) await runBatch([waiting])
      return
    }
    for (const [i, w] of batch.entries()) w.resolve(outcomes[i]!)
    observe(batch.length, 'written')
  }

  function observe(items: number, outcome: 'written' | 'failed') {
    try {
      options.observer?.(options.name, items, outcome)
    } catch {}
  }

  function startBatches() {
    scheduled = false
    while (queue.length > 0 && inFlight < options.maxInFlight) {
      const batch = queue.splice(0, options.maxItems)
      inFlight++
      void runBatch(batch).finally(() => {
        inFlight--
        startBatches()
      })
    }
  }

  return (item: I) => {
    // A request with a transaction of its own (an Idempotency-Key) writes alone, in it.
    if (inRequestTransaction()) return run([item]).then((outcomes) => outcomes[0]!)
    return queued(item)
  }

  function queued(item: I) {
    return new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject })
      // Writes queued in the current turn join this batch, which belongs to no single request's scope.
      if (!scheduled) {
        scheduled = true
        outsideRequestScope(() => queueMicrotask(startBatches))
      }
    })
  }
}
