import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { locationId } from './helpers/app.ts'
import { company, contract, subsidiary } from './helpers/factories.ts'
import { commBody, commsUrl, createComm, getComm, messagesOf } from './communications.fixtures.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const LIMIT = 4096
const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(100, 0x20), Buffer.from('\n%%EOF\n')])
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(32, 1)])
const DOCX_MIME = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'

/** A multipart/form-data body with one file part (and optional text fields before it). */
function form(
  file: { field?: string; name: string; type: string; content: Buffer } | null,
  fields: Record<string, string> = {},
) {
  const boundary = '----comm-test-boundary'
  const chunks: Buffer[] = []
  for (const [name, value] of Object.entries(fields)) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`))
  }
  if (file) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'file'}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`,
      ),
    )
    chunks.push(file.content, Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

onEachEngine('communication attachments', { ATTACHMENT_MAX_BYTES: LIMIT }, (t) => {
  const upload = (companyId: string, token: string | null, payload: ReturnType<typeof form>) =>
    t.call({
      method: 'POST',
      url: commsUrl(companyId, '/attachments'),
      token,
      body: payload.body,
      headers: payload.headers,
    })

  it('stores an upload, streams it back with its type, and attaches it to a communication', async () => {
    const c = await company(t)
    const res = await upload(
      c.id,
      c.token,
      form({ name: '../../etc/policy.pdf', type: 'application/pdf', content: PDF }),
    )
    assert.equal(res.statusCode, 201, res.body)
    const created = res.json()
    assert.deepEqual(created, { id: locationId(res), name: 'policy.pdf', mime: 'application/pdf', size: PDF.length })
    assert.equal(res.headers.location, commsUrl(c.id, `/attachments/${created.id}`))
    const got = await t.call({ url: res.headers.location as string, token: c.token })
    assert.equal(got.statusCode, 200)
    assert.equal(got.headers['content-type'], 'application/pdf')
    assert.equal(got.headers['x-content-type-options'], 'nosniff')
    assert.match(String(got.headers['content-disposition']), /attachment; filename="policy.pdf"/)
    assert.ok(got.rawPayload.equals(PDF))
    for (const [name, type, content] of [
      ['logo.png', 'image/png', PNG],
      ['notes.txt', 'text/plain; charset=utf-8', Buffer.from('caffè ☕\n')],
      ['a.docx', DOCX_MIME, Buffer.from('PK\u0003\u0004rest')],
    ] as const) {
      const ok = await upload(c.id, c.token, form({ name, type, content }))
      assert.equal(ok.statusCode, 201, `${name}: ${ok.body}`)
      assert.equal(ok.json().mime, type.split(';')[0])
    }
    const s = await subsidiary(t, c.id)
    const recipient = await contract(t, c.id, { subsidiary_id: s })
    const sendAt = new Date(t.clock.now().getTime() - 1000).toISOString()
    const id = await createComm(t, c, {
      send_at: sendAt,
      destination_subsidiary_ids: [s],
      attachments: [{ id: created.id, name: 'whatever', mime: 'x/y' }],
    })
    const attached = [{ id: created.id, name: 'policy.pdf', mime: 'application/pdf' }]
    assert.deepEqual((await getComm(t, c, id)).attachments, attached)
    // Delivered (due in the past: at the next run), the recipient's message carries the attachment.
    await t.app.services.scheduler.runDue()
    assert.deepEqual(
      (await messagesOf(t, c, id, sendAt)).map((m: any) => m.contract_id),
      [recipient],
    )
    const inbox = await t.json(200, {
      url: `/api/v1/companies/${c.id}/contracts/${recipient}/messages`,
      token: c.token,
    })
    assert.deepEqual(
      inbox.messages.map((m: any) => [m.communication_id, m.attachments]),
      [[id, attached]],
    )
  })

  it('answers 413 above the size limit and 415 for a type not allowed or a content not of its type', async () => {
    const c = await company(t)
    const big = await upload(
      c.id,
      c.token,
      form({ name: 'big.pdf', type: 'application/pdf', content: Buffer.concat([PDF, Buffer.alloc(LIMIT)]) }),
    )
    assert.equal(big.statusCode, 413)
    assert.equal(big.json().code, 'payload_too_large')
    const atLimit = await upload(
      c.id,
      c.token,
      form({
        name: 'exact.pdf',
        type: 'application/pdf',
        content: Buffer.concat([PDF, Buffer.alloc(LIMIT - PDF.length, 0x20)]),
      }),
    )
    assert.equal(atLimit.statusCode, 201, atLimit.body)
    for (const [type, content] of [
      ['image/gif', Buffer.from('GIF89a')],
      ['application/zip', Buffer.from('PK\u0003\u0004')],
      ['text/html', Buffer.from('<script>')],
      ['application/pdf', Buffer.from('not a pdf')],
      ['image/png', PDF],
      ['text/plain', Buffer.from([0x66, 0x00, 0x67])],
      [DOCX_MIME, PDF],
    ] as const) {
      const res = await upload(c.id, c.token, form({ name: 'f', type, content: Buffer.from(content) }))
      assert.equal(res.statusCode, 415, `${type}: ${res.body}`)
      assert.equal(res.json().code, 'unsupported_media_type')
    }
    const json = await t.call({
      method: 'POST',
      url: commsUrl(c.id, '/attachments'),
      token: c.token,
      body: { file: 'x' },
    })
    assert.equal(json.statusCode, 415)
    const noFile = await upload(c.id, c.token, form(null, { note: 'hello' }))
    assert.equal(noFile.statusCode, 400)
    assert.match(noFile.json().errors, /body\/file/)
    const wrongField = await upload(
      c.id,
      c.token,
      form({ field: 'document', name: 'a.pdf', type: 'application/pdf', content: PDF }),
    )
    assert.equal(wrongField.statusCode, 400)
    // Multipart is accepted by the upload only: the other routes stay JSON-only.
    const multipartElsewhere = await t.call({
      method: 'POST',
      url: commsUrl(c.id),
      token: c.token,
      ...(() => {
        const f = form(null, commBody())
        return { body: f.body, headers: f.headers }
      })(),
    })
    assert.equal(multipartElsewhere.statusCode, 415)
  })

  it('keeps attachments within their company', async () => {
    const c = await company(t)
    const other = await company(t)
    const res = await upload(other.id, other.token, form({ name: 'secret.pdf', type: 'application/pdf', content: PDF }))
    const foreign = res.json().id
    assert.equal((await t.call({ url: commsUrl(c.id, `/attachments/${foreign}`), token: c.token })).statusCode, 404)
    assert.equal((await t.call({ url: commsUrl(other.id, `/attachments/${foreign}`), token: c.token })).statusCode, 404)
    assert.equal(
      (await upload(other.id, c.token, form({ name: 'a.pdf', type: 'application/pdf', content: PDF }))).statusCode,
      404,
    )
    assert.equal(
      (await upload(c.id, null, form({ name: 'a.pdf', type: 'application/pdf', content: PDF }))).statusCode,
      401,
    )
    assert.equal((await t.call({ url: commsUrl(other.id, `/attachments/${foreign}`), token: null })).statusCode, 401)
    const attach = await t.call({
      method: 'POST',
      url: commsUrl(c.id),
      token: c.token,
      body: commBody({ status: 'draft', attachments: [{ id: foreign }] }),
    })
    assert.equal(attach.statusCode, 400)
    assert.match(attach.json().errors, /body\/attachments/)
  })
  describe('with an Idempotency-Key', () => {
    before(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' })
    })

    /** Opens a raw connection and sends a keyed upload's head and the first `sent` bytes of its body. */
    async function startUpload(
      c: { id: string; token: string },
      key: string,
      payload: ReturnType<typeof form>,
      sent: number,
    ) {
      const { port } = t.app.server.address() as net.AddressInfo
      const socket = net.connect(port, '127.0.0.1')
      await new Promise((resolve) => socket.once('connect', resolve))
      let answer = ''
      socket.on('data', (chunk) => {
        answer += chunk
      })
      socket.on('error', () => {})
      socket.write(
        `POST ${commsUrl(c.id, '/attachments')} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${c.token}\r\nIdempotency-Key: ${key}\r\nConnection: close\r\n` +
          `Content-Type: ${payload.headers['content-type']}\r\nContent-Length: ${payload.body.length}\r\n\r\n`,
      )
      socket.write(payload.body.subarray(0, sent))
      return { socket, answer: () => answer }
    }

    it('claims the key only once the whole file is in: others are answered while a client still sends it', {
      timeout: 30_000,
    }, async () => {
      const a = await company(t)
      const b = await company(t)
      const key = randomUUID()
      const payload = form({ name: 'slow.pdf', type: 'application/pdf', content: PDF })
      const upload = await startUpload(a, key, payload, 60)
      // Until the server has the head and has started reading (an answer would come if it refused it).
      await new Promise((resolve) => setTimeout(resolve, 200))
      // No transaction holds the key's table while the body is still coming (on PGlite, one that
      // did would hold the only connection, and this read would wait for the upload).
      const locks = await sql<{
        n: number
      }>`SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
        WHERE c.relname = 'idempotency_keys' AND l.pid <> pg_backend_pid()`.execute(t.app.database.db)
      assert.equal(locks.rows[0]!.n, 0)
      assert.equal((await t.call({ url: `/api/v1/companies/${b.id}/subsidiaries`, token: b.token })).statusCode, 200)
      assert.equal(upload.answer(), '', 'the upload is not answered before its body is in')
      upload.socket.write(payload.body.subarray(60))
      await new Promise((resolve) => upload.socket.once('end', resolve))
      assert.match(upload.answer(), /^HTTP\/1\.1 201/)
      const replay = await t.call({
        method: 'POST',
        url: commsUrl(a.id, '/attachments'),
        token: a.token,
        body: payload.body,
        headers: { ...payload.headers, 'idempotency-key': key },
      })
      assert.equal(replay.statusCode, 201, replay.body)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
    })

    it('keeps nothing for an upload whose connection dropped: the retry runs', { timeout: 30_000 }, async () => {
      const c = await company(t)
      const key = randomUUID()
      const payload = form({ name: 'dropped.pdf', type: 'application/pdf', content: PDF })
      const upload = await startUpload(c, key, payload, 60)
      await new Promise((resolve) => setTimeout(resolve, 200))
      upload.socket.destroy()
      await new Promise((resolve) => setTimeout(resolve, 200))
      const retry = await t.call({
        method: 'POST',
        url: commsUrl(c.id, '/attachments'),
        token: c.token,
        body: payload.body,
        headers: { ...payload.headers, 'idempotency-key': key },
      })
      assert.equal(retry.statusCode, 201, retry.body)
      assert.equal(retry.headers['idempotent-replayed'], undefined)
    })

    it('replays the same file under the same key, and answers 409 to another file under it', async () => {
      const c = await company(t)
      const key = randomUUID()
      const send = (content: Buffer) => {
        const payload = form({ name: 'same-name.pdf', type: 'application/pdf', content })
        return t.call({
          method: 'POST',
          url: commsUrl(c.id, '/attachments'),
          token: c.token,
          body: payload.body,
          headers: { ...payload.headers, 'idempotency-key': key },
        })
      }
      const first = await send(PDF)
      assert.equal(first.statusCode, 201, first.body)
      const again = await send(PDF)
      assert.equal(again.statusCode, 201)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.json().id, first.json().id)
      const other = await send(Buffer.concat([PDF, Buffer.from('another revision\n')]))
      assert.equal(other.statusCode, 409, other.body)
      assert.match(other.json().errors, /Idempotency-Key was used with another request/)
    })
  })
})
