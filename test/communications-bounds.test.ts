import { it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { company, subsidiary } from './helpers/factories.ts'
import { commBody, commsUrl, createComm, getComm, putComm } from './communications.fixtures.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** What a client may write into a communication, and what its change_log keeps of it. */

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

/** The instant one calendar year before `at` (UTC), as the service bounds `send_at`. */
function yearBefore(at: Date): Date {
  const d = new Date(at)
  d.setUTCFullYear(d.getUTCFullYear() - 1)
  return d
}

onEachEngine('communication bounds', (t) => {
  it('refuses a send_at more than a year ago or from 2200 on (company calendar), naming send_at', async () => {
    const c = await company(t) // Europe/Rome: 2200-01-01 begins at 2199-12-31T23:00:00Z
    const s = await subsidiary(t, c.id)
    const oldest = yearBefore(t.clock.now())
    const refused = [
      '0001-01-01T00:00:00Z',
      '1970-01-01T00:00:00Z',
      new Date(oldest.getTime() - 1).toISOString(),
      '2199-12-31T23:00:00Z',
      '2200-01-01T00:00:00Z',
      '9999-12-31T23:59:59Z',
    ]
    for (const send_at of refused) {
      for (const status of ['draft', 'scheduled']) {
        const res = await t.call({
          method: 'POST',
          url: commsUrl(c.id),
          token: c.token,
          body: commBody({ send_at, status, destination_subsidiary_ids: [s] }),
        })
        assert.equal(res.statusCode, 400, `${send_at} ${status}: ${res.body}`)
        assert.match(res.json().errors, /body\/send_at/, send_at)
      }
    }
    // The bounds themselves are accepted, and each is readable back through the list's `year`.
    const first = await createComm(t, c, { status: 'draft', send_at: oldest.toISOString() })
    const last = await createComm(t, c, { status: 'draft', send_at: '2199-12-31T22:59:59.999Z' })
    assert.equal((await getComm(t, c, first)).send_at, oldest.toISOString())
    const in2199 = await t.json(200, { url: commsUrl(c.id), token: c.token, query: { year: '2199' } })
    assert.deepEqual(
      in2199.map((x: any) => x.id),
      [last],
    )
    const yearInRome = new Intl.DateTimeFormat('en-US', { timeZone: 'Europe/Rome', year: 'numeric' }).format(oldest)
    const inFirstYear = await t.json(200, { url: commsUrl(c.id), token: c.token, query: { year: yearInRome } })
    assert.ok(
      inFirstYear.some((x: any) => x.id === first),
      'the oldest send_at accepted is listed in its year',
    )
  })

  it('refuses a PUT that moves send_at out of bounds, and accepts a body sent back as read', async () => {
    const c = await company(t)
    const id = await createComm(t, c, { status: 'draft' })
    for (const send_at of ['0001-01-01T00:00:00Z', '2200-06-01T00:00:00Z']) {
      const res = await putComm(t, c, id, { send_at })
      assert.equal(res.statusCode, 400, res.body)
      assert.match(res.json().errors, /body\/send_at/)
    }
    // A send_at that was in bounds when written and has since aged past a year (stored so here,
    // as time would have made it) stays writable back unchanged: only a new send_at is checked.
    const aging = await createComm(t, c, { status: 'draft' })
    const aged = new Date(t.clock.now().getTime() - 400 * 86_400_000)
    await t.app.database.db
      .updateTable('communications')
      .set({ send_at: aged })
      .where('company_id', '=', c.id)
      .where('id', '=', aging)
      .execute()
    const read = await getComm(t, c, aging)
    assert.equal(read.send_at, aged.toISOString())
    assert.equal((await putComm(t, c, aging, { ...read, subject: 'Changed' })).statusCode, 202)
    assert.equal((await getComm(t, c, aging)).subject, 'Changed')
    const moved = await putComm(t, c, aging, { send_at: new Date(aged.getTime() + 1000).toISOString() })
    assert.equal(moved.statusCode, 400, moved.body)
    assert.match(moved.json().errors, /body\/send_at/)
  })

  it('records text over 200 characters in change_log as {length, sha256}, shorter text as itself', async () => {
    const c = await company(t)
    const exactly200 = 's'.repeat(200)
    const long = 'é'.repeat(250) // characters, not bytes: 250, while its UTF-8 is 500 bytes
    const id = await createComm(t, c, { status: 'draft', subject: exactly200, message: long })
    const created = (await getComm(t, c, id)).change_log[0]
    assert.deepEqual(created.changes.subject, [null, exactly200])
    assert.deepEqual(created.changes.message, [null, { length: 250, sha256: sha256(long) }])

    const big = (n: number) => `${n}:${'x'.repeat(50_000 - String(n).length - 1)}`
    for (let n = 1; n <= 5; n++)
      assert.equal((await putComm(t, c, id, { message: big(n), subject: `s${n}` })).statusCode, 202)
    const got = await getComm(t, c, id)
    assert.equal(got.message, big(5))
    const updates = got.change_log.filter((e: any) => e.action === 'updated')
    assert.equal(updates.length, 5)
    assert.deepEqual(updates[0].changes.message, [
      { length: 250, sha256: sha256(long) },
      { length: 50_000, sha256: sha256(big(1)) },
    ])
    assert.deepEqual(updates[4].changes.message, [
      { length: 50_000, sha256: sha256(big(4)) },
      { length: 50_000, sha256: sha256(big(5)) },
    ])
    assert.deepEqual(updates[0].changes.subject, [exactly200, 's1'])
    // Six entries about two 50 KB texts stay a few KB: the log no longer grows with the message.
    assert.ok(
      JSON.stringify(got.change_log).length < 5_000,
      `change_log is ${JSON.stringify(got.change_log).length} characters`,
    )
  })
})
