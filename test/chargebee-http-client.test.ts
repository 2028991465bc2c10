import { it } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { timedFetchClient } from '../src/modules/chargebee/chargebee.sdk.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

it('a Chargebee call ends at its timeout under garbage collection, and its connection is closed', async (t) => {
  let closed!: () => void
  const connectionClosed = new Promise<void>((resolve) => {
    closed = resolve
  })
  // A Chargebee that never answers.
  const server = http.createServer((req, res) => {
    req.resume()
    res.on('close', closed)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    server.closeAllConnections()
    server.close()
  })
  const { port } = server.address() as AddressInfo
  // Collects the copies of the request that the timeout's abort goes through, as a busy process would.
  const collecting = setInterval(gc, 20)
  t.after(() => clearInterval(collecting))
  const began = Date.now()
  const request = new Request(`http://127.0.0.1:${port}/api/v2/customers`, { method: 'POST', body: 'id=a' })
  await assert.rejects(timedFetchClient.makeApiRequest(request, 300), { type: 'timeout', http_status_code: 504 })
  assert.ok(Date.now() - began < 5000, "ended at the timeout, not at undici's headers timeout")
  await connectionClosed
})
