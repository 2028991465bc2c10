import http from 'node:http'
import { Agent, type Dispatcher } from 'undici'
import { newSecret, signatureHeaders } from '../src/modules/webhook-endpoints/signing.ts'

// The events workload's ceiling: a raw node:http server answering each POST from memory (ANSWER), then
// making the change's ten deliveries as the service's sender does, with no database. An event id is
// `ceiling_<ms>_<n>`; `GET /__changes` answers how many changes it has answered.
const MAX_IN_FLIGHT_PER_RECEIVER = 256
const RETRY_AFTER_MS = 5000
const TIMEOUT_MS = 10_000

const answer = JSON.parse(process.env.ANSWER ?? '{"status":202,"location":null,"body":""}') as {
  status: number
  location: string | null
  body: string
}
const answerBody = Buffer.from(answer.body)
const answerHeaders: Record<string, string | number> = { 'content-length': answerBody.length }
if (answerBody.length > 0) answerHeaders['content-type'] = 'application/json; charset=utf-8'
if (answer.location) answerHeaders.location = answer.location
const template = JSON.parse(process.env.EVENT_TEMPLATE ?? '{}') as {
  type?: string
  company_id?: string | null
  data?: unknown
}
const receivers = (process.env.RECEIVERS ?? '')
  .split(',')
  .filter(Boolean)
  .map((u) => {
    const url = new URL(u)
    return {
      origin: url.origin,
      path: url.pathname + url.search,
      secrets: [newSecret()],
      inFlight: 0,
      waiting: [] as Call[],
    }
  })
type Receiver = (typeof receivers)[number]
interface Call {
  id: string
  body: string
  retried: boolean
}
const agent = new Agent({ keepAliveMaxTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 })
let changes = 0
let stopping = false

function deliver(receiver: Receiver, call: Call) {
  if (stopping) return
  if (receiver.inFlight >= MAX_IN_FLIGHT_PER_RECEIVER) return void receiver.waiting.push(call)
  receiver.inFlight++
  let status = 0
  let controller: Dispatcher.DispatchController | undefined
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller?.abort(new Error('timeout'))
  }, TIMEOUT_MS)
  const done = () => {
    clearTimeout(timer)
    receiver.inFlight--
    if ((status < 200 || status >= 300) && !call.retried)
      setTimeout(() => deliver(receiver, { ...call, retried: true }), RETRY_AFTER_MS)
    const next = receiver.waiting.shift()
    if (next) deliver(receiver, next)
  }
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'company-admin-api-webhooks/1',
    ...signatureHeaders(receiver.secrets, call.id, call.body, Math.floor(Date.now() / 1000)),
  }
  // onRequestStart marks undici's current handler interface.
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart(c) {
      controller = c
      if (timedOut) c.abort(new Error('timeout'))
    },
    onResponseStart(_c, statusCode) {
      if (statusCode >= 200) status = statusCode
    },
    onResponseData() {},
    onResponseEnd: done,
    onResponseError: done,
  }
  agent.dispatch({ origin: receiver.origin, path: receiver.path, method: 'POST', headers, body: call.body }, handler)
}

const server = http.createServer((request, response) => {
  request.resume()
  request.on('end', () => {
    if (request.url === '/__changes')
      return void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ changes }))
    response.writeHead(answer.status, answerHeaders).end(answerBody)
    const now = Date.now()
    const id = `ceiling_${now}_${changes++}`
    const body = JSON.stringify({
      id,
      type: template.type,
      created_at: new Date(now).toISOString(),
      company_id: template.company_id,
      data: template.data,
    })
    for (const receiver of receivers) deliver(receiver, { id, body, retried: false })
  })
})

server.keepAliveTimeout = 72_000
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('listening\n'))
process.on('SIGTERM', () => {
  stopping = true
  server.closeAllConnections()
  void agent.destroy().finally(() => process.exit(0))
})
