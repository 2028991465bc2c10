import { randomUUID } from 'node:crypto'
import type { Clock } from '../../core/clock.ts'
import { NotFound, UnsupportedMediaType } from '../../core/errors.ts'
import type { AttachmentsRepository } from './attachments.repository.ts'

// The declared type must match the first bytes, so a download served with it is what it says.
const ALLOWED: Record<string, (content: Buffer) => boolean> = {
  'application/pdf': (b) => b.subarray(0, 5).toString('latin1') === '%PDF-',
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'text/plain': (b) => !b.includes(0) && isUtf8(b),
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': isZip,
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': isZip,
}

export const ALLOWED_TYPES = Object.keys(ALLOWED)

function isZip(b: Buffer) {
  return b.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]))
}

function isUtf8(b: Buffer) {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(b)
    return true
  } catch {
    return false
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
const UNSAFE_IN_NAMES = /[\u0000-\u001f\u007f"]/g

/** A file name without directories or control characters, at most 255 characters. */
function cleanName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop()!.replace(UNSAFE_IN_NAMES, '').trim()
  return base.slice(0, 255) || 'attachment'
}

export function createAttachmentsService(deps: { repo: AttachmentsRepository; clock: Clock }) {
  return {
    async upload(companyId: string, file: { filename?: string; mimetype: string; content: Buffer }, actor: string) {
      const mime = file.mimetype.split(';')[0]!.trim().toLowerCase()
      const check = ALLOWED[mime]
      if (!check)
        throw new UnsupportedMediaType(
          `An attachment must be one of ${ALLOWED_TYPES.join(', ')}; got ${mime || 'no type'}`,
        )
      if (!check(file.content)) throw new UnsupportedMediaType(`The file's content is not ${mime}`)
      const row = {
        company_id: companyId,
        id: randomUUID(),
        name: cleanName(file.filename),
        mime,
        size: file.content.length,
      }
      await deps.repo.insert({ ...row, content: file.content, created_by: actor, created_at: deps.clock.now() })
      return { id: row.id, name: row.name, mime: row.mime, size: row.size }
    },

    async download(companyId: string, id: string) {
      const row = await deps.repo.find(companyId, id)
      if (!row) throw new NotFound('Attachment')
      const content = Buffer.isBuffer(row.content) ? row.content : Buffer.from(row.content as Uint8Array)
      return { name: row.name, mime: row.mime, size: row.size, content }
    },
  }
}

export type AttachmentsService = ReturnType<typeof createAttachmentsService>
