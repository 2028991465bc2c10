import { createHash } from 'node:crypto'
import { Type } from 'typebox'
import type { FastifyRequest } from 'fastify'
import multipart from '@fastify/multipart'
import type { App } from '../../http/app-types.ts'
import { principalOf } from '../../http/auth.ts'
import { AppError, PayloadTooLarge, UnsupportedMediaType, ValidationError } from '../../core/errors.ts'
import { ErrorBody, Uuid } from '../../http/schemas.ts'
import { ALLOWED_TYPES, type AttachmentsService } from './attachments.service.ts'

const BASE = '/api/v1/companies/:company_id/communications/attachments'
const tags = ['Communications']
const access = { area: 'company_communication' }

const Attachment = Type.Object(
  {
    id: Uuid(),
    name: Type.String({ description: 'The uploaded file name, without directories' }),
    mime: Type.String({ description: `One of ${ALLOWED_TYPES.join(', ')}` }),
    size: Type.Integer({ description: 'Bytes' }),
  },
  { additionalProperties: false, title: 'Attachment' },
)

// Documentation only: a multipart body is read by the handler, never parsed into request.body.
const UploadBody = {
  content: {
    'multipart/form-data': {
      schema: {
        title: 'AttachmentUpload',
        properties: {
          file: {
            type: 'string',
            format: 'binary',
            description: 'The file; its part Content-Type must be an allowed type',
          },
        },
        required: ['file'],
      },
    },
  },
}

type Upload = Awaited<ReturnType<typeof readFile>>

declare module 'fastify' {
  interface FastifyRequest {
    upload: Upload | null
  }
}

// Multipart is registered in this plugin only, so every other route still accepts JSON alone.
export async function attachmentsRoutes(
  app: App,
  { service, maxBytes }: { service: AttachmentsService; maxBytes: number },
) {
  await app.register(multipart, { limits: { fileSize: maxBytes, files: 1, fields: 10, parts: 11, headerPairs: 100 } })
  app.decorateRequest('upload', null)

  app.post(
    BASE,
    {
      config: { access },
      schema: {
        operationId: 'uploadCommunicationAttachment',
        tags,
        summary: 'Upload an attachment (multipart/form-data, one part named file)',
        description:
          `At most ${maxBytes} bytes (413 above); allowed types: ${ALLOWED_TYPES.join(', ')} (415 otherwise, or ` +
          `when the content is not of the declared type). Answers 201 with the attachment and Location; a ` +
          `communication then names it in attachments by id.`,
        params: Type.Object({ company_id: Uuid() }),
        body: UploadBody as never,
        response: {
          201: Attachment,
          413: {
            ...ErrorBody,
            description: `The file is larger than ${maxBytes} bytes, or the form has more than 11 parts before it`,
          },
          415: {
            ...ErrorBody,
            description: 'Not multipart/form-data, a type not allowed, or a content not of its declared type',
          },
        },
      },
      // Read whole before the Idempotency-Key claim opens a transaction, so a slow client holds no
      // connection; the file is part of the request's hash, so another file under the same key is a 409.
      preValidation: async (request) => {
        if (!request.isMultipart())
          throw new UnsupportedMediaType('The body must be multipart/form-data with one part named file')
        const file = await readFile(request, maxBytes)
        request.upload = file
        request.idempotencyDigest = createHash('sha256')
          .update(`${JSON.stringify(file.filename)}\n${JSON.stringify(file.mimetype)}\n`)
          .update(file.content)
          .digest('hex')
      },
    },
    async (request, reply) => {
      const file = request.upload!
      const created = await service.upload(request.params.company_id, file, principalOf(request).clientId)
      reply.header(
        'location',
        `/api/v1/companies/${request.params.company_id}/communications/attachments/${created.id}`,
      )
      return reply.code(201).send(created)
    },
  )

  app.get(
    `${BASE}/:id`,
    {
      config: { access },
      schema: {
        operationId: 'downloadCommunicationAttachment',
        tags,
        summary: 'Download an attachment, with its mime as Content-Type',
        params: Type.Object({ company_id: Uuid(), id: Uuid('The attachment') }),
        response: {
          200: {
            description: 'The file, served with its type',
            content: Object.fromEntries(
              ALLOWED_TYPES.map((type) => [type, { schema: { type: 'string', format: 'binary' } }]),
            ),
          } as never,
        },
      },
    },
    async (request, reply) => {
      const file = await service.download(request.params.company_id, request.params.id)
      return reply
        .header('content-type', file.mime)
        .header('content-length', String(file.size))
        .header(
          'content-disposition',
          `attachment; filename="${file.name.replace(/[^\x20-\x7e]/g, '_')}"; ` +
            `filename*=UTF-8''${encodeURIComponent(file.name)}`,
        )
        .header('x-content-type-options', 'nosniff')
        .send(file.content)
    },
  )
}

/** 413 above the limit. */
async function readFile(request: FastifyRequest, maxBytes: number) {
  try {
    const part = await request.file()
    if (!part) throw new ValidationError('body/file is required: send the file as the multipart part named file')
    if (part.fieldname !== 'file')
      throw new ValidationError(
        `body/${part.fieldname} is not a known field: send the file as the multipart part named file`,
      )
    const content = await part.toBuffer()
    return { filename: part.filename, mimetype: part.mimetype, content }
  } catch (err) {
    if (err instanceof AppError) throw err
    const status = (err as { statusCode?: number }).statusCode
    if (status === 413)
      throw new PayloadTooLarge(
        `The file is larger than ${maxBytes} bytes, or the form has more than 11 parts before it`,
      )
    if (status === 406) throw new UnsupportedMediaType('The body must be multipart/form-data with one part named file')
    throw new ValidationError(`The multipart body is malformed: ${(err as Error).message}`)
  }
}
