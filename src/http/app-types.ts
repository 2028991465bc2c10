import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'

/** The Fastify instance every module registers its routes on: schemas type the handlers. */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>

/** The spec's 202 with no body; a creation also says where the new resource is. */
export function accepted(reply: FastifyReply, location?: string) {
  if (location) reply.header('location', location)
  return reply.code(202).send()
}
