import type { FastifyBaseLogger } from 'fastify'
import type { ChildLoggerOptions } from 'pino'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/** What decides whether a line is written before the child exists: the logger it derives from. */
interface Root { level: string; isLevelEnabled?: (level: string) => boolean }

/**
 * A child logger that pino makes only when it first writes a line at an enabled level. Each
 * request had two children made whether or not it logged anything (its id, then its token's
 * client and company, http/auth.ts): 4 % of the server's CPU in the mix at LOG_LEVEL=warn, where
 * most requests write no line (bench/findings.md). A line, when there is one, is the child's own
 * line: the same bindings in the same order. A child of this one is lazy too, and made (with
 * this one) when it writes.
 *
 * Whether a level is enabled is asked of `root` until the child exists: right while the child
 * would inherit root's level. Options that set a level of their own (a route's logLevel) make
 * the child at once.
 */
export function lazyChild(root: Root, make: () => FastifyBaseLogger, options?: ChildLoggerOptions): FastifyBaseLogger {
  if (options?.level !== undefined) return make()
  let made: (FastifyBaseLogger & Root) | undefined
  const real = () => (made ??= make() as FastifyBaseLogger & Root)
  // What this child's own children ask: this child's answer once it exists, root's until then.
  const self: Root = {
    get level() { return made ? made.level : root.level },
    isLevelEnabled: (level) => (made ?? root).isLevelEnabled?.(level) ?? true,
  }
  const writer = (level: Level) => (...args: unknown[]) => {
    // Once made, the child checks the level itself.
    if (made || (root.isLevelEnabled?.(level) ?? true)) (real()[level] as (...a: unknown[]) => void)(...args)
  }
  return {
    get level() { return self.level },
    set level(level: string) { real().level = level },
    fatal: writer('fatal'),
    error: writer('error'),
    warn: writer('warn'),
    info: writer('info'),
    debug: writer('debug'),
    trace: writer('trace'),
    silent: () => {},
    child: (bindings, childOptions) => lazyChild(self, () => real().child(bindings, childOptions), childOptions),
  } as FastifyBaseLogger
}
