import { inRequestTransaction, outsideRequestScope } from './request-transaction.ts'

/**
 * Writes that arrive together go to the database together: one statement and one commit for
 * many requests, the way PostgreSQL's own group commit shares one WAL flush between
 * transactions, one level up. Each request still gets its own outcome: `run` answers one per
 * item, in order, and decides per item (a missing reference, a taken code) without failing the
 * others.
 *
 * Nothing waits for a batch to fill: an item starts a batch as soon as fewer than `maxInFlight`
 * are running, so a lone request goes at once. Under load the items that arrive while the
 * batches in flight run, commit and flush make up the next one (bench/findings.md measured
 * ten teams per statement at a quarter of the database's CPU per team; docs/decisions.md,
 * "Team creations share statements").
 *
 * A batch that fails as a whole (an error the statement cannot decide per item, such as a
 * deadlock or a lost connection) is run again one item at a time, so an error reaches only the
 * requests it belongs to.
 */
export interface WriteBatchOptions {
  /** What the batches write, for the metrics (`team_creation`). */
  name: string
  /** The most items one statement carries. */
  maxItems: number
  /** How many batches may run at once (each holds a connection of the pool while it runs). */
  maxInFlight: number
  observer?: WriteBatchObserver
}

/** Told of every batch: how many items it carried, and whether it failed as a whole (then run again item by item). */
export type WriteBatchObserver = (name: string, items: number, outcome: 'written' | 'failed') => void

interface Waiting<I, O> { item: I; resolve: (outcome: O) => void; reject: (err: unknown) => void }

export function writeBatches<I, O>(run: (items: I[]) => Promise<O[]>, options: WriteBatchOptions): (item: I) => Promise<O> {
  const queue: Waiting<I, O>[] = []
  let inFlight = 0
  let scheduled = false

  async function runBatch(batch: Waiting<I, O>[]) {
    let outcomes: O[]
    try {
      outcomes = await run(batch.map((w) => w.item))
      if (outcomes.length !== batch.length) throw new Error(`A write batch of ${batch.length} answered ${outcomes.length} outcomes`)
    } catch (err) {
      observe(batch.length, 'failed')
      if (batch.length === 1) return batch[0]!.reject(err)
      // Alone, each item meets only its own error; one after the other, as the batch would have
      // run, so a failed batch does not become a burst of statements on every connection.
      for (const waiting of batch) await runBatch([waiting])
      return
    }
    batch.forEach((w, i) => w.resolve(outcomes[i]!))
    observe(batch.length, 'written')
  }

  function observe(items: number, outcome: 'written' | 'failed') {
    try {
      options.observer?.(options.name, items, outcome)
    } catch {
      // Metrics never decide a write's fate.
    }
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
    // A request whose statements are one transaction of its own (an Idempotency-Key) writes alone, in it.
    if (inRequestTransaction()) return run([item]).then((outcomes) => outcomes[0]!)
    return queued(item)
  }

  function queued(item: I) {
    return new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject })
      // After the current turn's other writes have queued too: they join this batch. Outside the
      // request's scope: the batch is every request's, not this one's.
      if (!scheduled) {
        scheduled = true
        outsideRequestScope(() => queueMicrotask(startBatches))
      }
    })
  }
}
