import http from 'node:http'

/**
 * The ceiling: a raw node:http server answering, from memory, the status, content type and body
 * that the real server answered for the workload being measured. The harness sets that answer
 * with `PUT /__answer` before each ceiling round. Request bodies are read to the end, as the
 * real server does, so that a POST costs the same bytes on the wire.
 */
let answer = { status: 200, contentType: 'application/json; charset=utf-8', body: Buffer.from('{}') }

const server = http.createServer((request, response) => {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    if (request.url === '/__answer') {
      const given = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { status: number; contentType: string; body: string }
      answer = { status: given.status, contentType: given.contentType, body: Buffer.from(given.body) }
      response.writeHead(204).end()
      return
    }
    const headers: Record<string, string | number> = { 'content-length': answer.body.length }
    if (answer.body.length > 0) headers['content-type'] = answer.contentType
    response.writeHead(answer.status, headers).end(answer.body)
  })
})

server.keepAliveTimeout = 72_000
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('listening\n'))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
