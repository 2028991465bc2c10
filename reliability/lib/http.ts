import nodeHttp from 'node:http'

/** Keep-alive connections, as a real client keeps them; enough sockets for every scenario's writers. */
export const agent = new nodeHttp.Agent({ keepAlive: true, maxSockets: 256 })

export interface Request {
  method?: string
  url: string
  token?: string
  body?: unknown
  /** A body sent as is (already serialised, or deliberately broken). */
  raw?: string | Buffer
  headers?: Record<string, string>
  timeoutMs?: number
  /**
   * A connection of its own, closed after the answer: an answer that closes its connection (a
   * 413 before the body was read) must not be mistaken for the next request's on a shared one.
   */
  ownConnection?: boolean
}

export interface Response {
  status: number
  headers: nodeHttp.IncomingHttpHeaders
  text: string
  json(): any
}

/** One request; rejects only when no answer came (refused, reset, timed out). */
export function http(base: string, req: Request): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...req.headers }
    if (req.token) headers.authorization = `Bearer ${req.token}`
    let payload: string | Buffer | undefined = req.raw
    if (payload === undefined && req.body !== undefined) {
      payload = JSON.stringify(req.body)
      headers['content-type'] ??= 'application/json'
    }
    if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload))
    // The path goes as is: a URL object would normalise `..` and `%2e%2e` before the server sees them.
    const { hostname, port } = new URL(base)
    const r = nodeHttp.request(
      {
        host: hostname,
        port,
        path: req.url,
        method: req.method ?? 'GET',
        headers,
        agent: req.ownConnection ? false : agent,
        timeout: req.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', reject)
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) })
        })
      },
    )
    r.on('timeout', () => r.destroy(new Error('timeout')))
    r.on('error', reject)
    if (payload !== undefined) r.write(payload)
    r.end()
  })
}

/** A client bound to one server and one token. */
export function client(base: string, token?: string) {
  const call = (req: Request) => http(base, { token, ...req })
  return {
    base,
    token,
    call,
    async expect(status: number, req: Request) {
      const res = await call(req)
      if (res.status !== status)
        throw new Error(
          `${req.method ?? 'GET'} ${req.url}: expected ${status}, got ${res.status} ${res.text.slice(0, 300)}`,
        )
      return res
    },
  }
}

export type Client = ReturnType<typeof client>

export function locationId(res: Response): string {
  const location = res.headers.location
  if (typeof location !== 'string') throw new Error(`no Location (status ${res.status}: ${res.text.slice(0, 200)})`)
  return location.split('/').pop()!
}
