import http from 'node:http'

/**
 * The ceiling: a raw node:http server answering from memory what the real server answered,
 * set by `PUT /__answer` (or per kind by `PUT /__answers`, first matching method and pattern).
 * Bodies are read to the end, so a POST costs the same bytes on the wire.
 */
interface Answer {
  status: number
  contentType: string
  body: Buffer
}
let answer: Answer = { status: 200, contentType: 'application/json; charset=utf-8', body: Buffer.from('{}') }
let routes: Array<{ method: string; pattern: RegExp; answer: Answer }> = []

function answerFor(request: http.IncomingMessage): Answer {
  for (const route of routes)
    if (route.method === request.method && route.pattern.test(request.url ?? '')) return route.answer
  return answer
}

const server = http.createServer((request, response) => {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    if (request.url === '/__answer' || request.url === '/__answers') {
      const given = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      const made = (a: { status: number; contentType: string; body: string }) => ({
        status: a.status,
        contentType: a.contentType,
        body: Buffer.from(a.body),
      })
      if (request.url === '/__answer') {
        answer = made(given)
        routes = []
      } else
        routes = (
          given as Array<{ method: string; pattern: string; status: number; contentType: string; body: string }>
        ).map((r) => ({ method: r.method, pattern: new RegExp(r.pattern), answer: made(r) }))
      response.writeHead(204).end()
      return
    }
    const chosen = answerFor(request)
    const headers: Record<string, string | number> = { 'content-length': chosen.body.length }
    if (chosen.body.length > 0) headers['content-type'] = chosen.contentType
    response.writeHead(chosen.status, headers).end(chosen.body)
  })
})

server.keepAliveTimeout = 72_000
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('listening\n'))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
