import type { FastifyInstance } from 'fastify'

/** Whether /ready should send the balancer elsewhere: from SIGTERM (or close) on. */
export interface Readiness {
  stopping: boolean
}

export function createReadiness(app: FastifyInstance): Readiness {
  const readiness = { stopping: false }
  // Tests and tools close the app without a signal: readiness goes with it.
  app.addHook('preClose', async () => {
    readiness.stopping = true
  })
  // A kept-alive connection would hold the closing server open until it idles out (Node closes
  // idle connections once, when the listener closes): once stopping, every answer closes its
  // connection, and the client (or balancer) opens its next one elsewhere.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (readiness.stopping) reply.header('connection', 'close')
    done(null, payload)
  })
  return readiness
}

export interface ShutdownSettings {
  delayMs: number
  timeoutMs: number
}

/**
 * On SIGTERM or SIGINT: /ready answers 503, everything is served for `delayMs` while the balancer
 * notices, then the listener closes, requests in flight finish, jobs stop, the database closes.
 * Beyond `timeoutMs` more the process exits with code 1.
 */
export function installShutdown(
  app: FastifyInstance,
  readiness: Readiness,
  settings: ShutdownSettings,
  exit: (code: number) => void = process.exit,
) {
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    readiness.stopping = true
    app.log.info({ signal, delay_ms: settings.delayMs }, 'shutting down: /ready answers 503')
    setTimeout(() => {
      app.log.info('no longer accepting connections; finishing the requests in flight')
      const force = setTimeout(() => {
        app.log.error(
          { timeout_ms: settings.timeoutMs },
          'stopped before the requests in flight finished: the shutdown took too long',
        )
        exit(1)
      }, settings.timeoutMs)
      force.unref()
      app.close().then(
        () => {
          app.log.info({ signal }, 'stopped')
          exit(0)
        },
        (err: unknown) => {
          app.log.error({ err }, 'stopped: the shutdown failed')
          exit(1)
        },
      )
    }, settings.delayMs)
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}
