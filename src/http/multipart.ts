import { setImmediate as nextTurn } from 'node:timers/promises'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Busboy, type BusboyHeaders, type BusboyInstance } from '@fastify/busboy'
import { AppError, ValidationError } from './errors.ts'

/**
 * Multipart bodies, read as they arrive by the one route that takes them. Busboy parses whatever
 * it is handed at once, each part a stream of its own even when skipped past a limit: a megabyte
 * of tiny parts handed in one piece held the event loop 0.5–1.8 s here. Over a socket Node hands
 * it at most one 64 KiB read at a time (~10 ms of such parts), but that bound was Node's, not
 * ours: the body is fed to busboy in slices of SLICE_BYTES (a few ms at most) with a turn of the
 * event loop between them, and no more is fed once the answer is known (the file read, or a limit
 * reached); the rest is read and dropped.
 */
const SLICE_BYTES = 4 * 1024
const MAX_FIELDS = 10

/** Lets a plugin's routes take multipart/form-data: Fastify leaves the body to readOneFile. */
export function acceptMultipart(app: FastifyInstance) {
  app.addContentTypeParser('multipart/form-data', (_request, _payload, done) => done(null, undefined))
}

export function isMultipart(request: FastifyRequest): boolean {
  return /^multipart\/form-data(;|$)/i.test(request.headers['content-type'] ?? '')
}

export interface UploadedFile { filename: string | undefined; mimetype: string; content: Buffer }

/**
 * The file of the part named `field`, whole. Text fields before it are ignored (at most
 * MAX_FIELDS), and so is everything after it; a file part of another name is a 400 naming it;
 * a file over `maxBytes`, or more parts than that before the file, a 413.
 */
export function readOneFile(request: FastifyRequest, options: { field: string; maxBytes: number }): Promise<UploadedFile> {
  const { field, maxBytes } = options
  const raw = request.raw
  return new Promise<UploadedFile>((resolve, reject) => {
    let settled = false
    // Set once the part named `field` begins: what follows it is ignored, whatever it is.
    let reading = false
    let fed = true
    const stopFeeding = () => {
      if (!fed) return
      fed = false
      raw.removeListener('data', onData)
      raw.resume()
    }
    const finish = (err: Error | undefined, file?: UploadedFile) => {
      if (settled) return
      settled = true
      stopFeeding()
      if (err) reject(err)
      else resolve(file!)
    }
    // A limit or part met after the file began means the file is whole: its end settles it.
    const afterFile = (otherwise: () => void) => () => { if (reading) stopFeeding(); else otherwise() }

    let busboy: BusboyInstance
    try {
      busboy = Busboy({ headers: raw.headers as BusboyHeaders, limits: { fileSize: maxBytes, files: 1, fields: MAX_FIELDS, parts: MAX_FIELDS + 1, headerPairs: 100 } })
    } catch (err) {
      return reject(new ValidationError(`The multipart body is malformed: ${(err as Error).message}`))
    }
    const tooMany = afterFile(() => finish(new AppError('payload_too_large', 413, `The form has more than ${MAX_FIELDS + 1} parts: send only the part named ${field}`)))
    busboy.on('partsLimit', tooMany).on('filesLimit', tooMany).on('fieldsLimit', tooMany)
    busboy.on('field', afterFile(() => {}))
    busboy.on('error', (err: Error) => finish(new ValidationError(`The multipart body is malformed: ${err.message}`)))
    busboy.on('finish', () => finish(new ValidationError(`body/${field} is required: send the file as the multipart part named ${field}`)))
    busboy.on('file', (name, stream, filename, _encoding, mimetype) => {
      if (reading) {
        stream.resume()
        return stopFeeding()
      }
      if (name !== field) {
        stream.resume()
        return finish(new ValidationError(`body/${name} is not a known field: send the file as the multipart part named ${field}`))
      }
      reading = true
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('limit', () => finish(new AppError('payload_too_large', 413, `The file is larger than ${maxBytes} bytes`)))
      stream.on('end', () => finish(undefined, { filename, mimetype, content: Buffer.concat(chunks) }))
    })

    // One chunk at a time: the request is paused until its slices are parsed.
    const onData = (chunk: Buffer) => {
      raw.pause()
      void feed(chunk).then(() => { if (fed) raw.resume() }, (err: Error) => finish(err))
    }
    async function feed(chunk: Buffer) {
      for (let at = 0; at < chunk.length && fed; at += SLICE_BYTES) {
        if (at > 0) await nextTurn()
        if (fed) busboy.write(chunk.subarray(at, at + SLICE_BYTES))
      }
    }
    raw.on('data', onData)
    raw.once('end', () => { if (fed) busboy.end() })
    raw.once('error', (err) => finish(err))
    raw.once('close', () => { if (!raw.complete) finish(new ValidationError('The multipart body ended before it was complete')) })
  })
}
