import http from 'node:http'
import type { AddressInfo } from 'node:net'

export type Behaviour = 'ok' | 'fail' | 'slow' | 'never' | 'large' | 'hints'

export interface Received {
  headers: Record<string, string>
  body: string
  at: number
}

/**
 * A webhook receiver on 127.0.0.1: `ok` answers 200, `fail` 500, `slow` answers 200 after
 * `slowMs` (beyond the delivery timeout), `never` never answers, `large` answers 200 with a body
 * of 1 MB (more than a sender reads), `hints` sends 103 Early Hints and then drops the
 * connection. The behaviour can change between requests; every request is kept.
 */
export async function receiver(initial: Behaviour, options: { slowMs?: number } = {}) {
  const received: Received[] = []
  let behaviour = initial
  const hanging = new Set<http.ServerResponse>()
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({
        headers: req.headers as Record<string, string>,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      })
      if (behaviour === 'ok') return res.writeHead(200).end('ok')
      if (behaviour === 'fail') return res.writeHead(500).end('boom')
      if (behaviour === 'large') return res.writeHead(200).end(Buffer.alloc(1024 * 1024, 'x'))
      if (behaviour === 'hints')
        return res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' }, () => res.socket?.destroy())
      hanging.add(res)
      if (behaviour === 'slow')
        setTimeout(() => {
          hanging.delete(res)
          if (!res.destroyed) res.writeHead(200).end('late')
        }, options.slowMs ?? 5_000).unref()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    set(next: Behaviour) {
      behaviour = next
    },
    /** Answers the oldest request left unanswered with `status` (a late answer, when the test chooses). */
    answerOldest(status: number) {
      const [res] = hanging
      if (!res) return false
      hanging.delete(res)
      res.writeHead(status).end('late')
      return true
    },
    /** Drops the connections of the requests left unanswered: their senders see an error at once. */
    release() {
      for (const res of hanging) res.destroy()
      hanging.clear()
    },
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
