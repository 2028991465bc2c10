import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions } from 'pino'

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
  return options?.level !== undefined ? make() : new LazyChild(root, make)
}

/** A class, not an object of closures: two per request, so what each costs is a few fields. */
class LazyChild implements FastifyBaseLogger, Root {
  private made: (FastifyBaseLogger & Root) | undefined
  constructor(private readonly root: Root, private readonly make: () => FastifyBaseLogger) {}

  private real(): FastifyBaseLogger & Root {
    return (this.made ??= this.make() as FastifyBaseLogger & Root)
  }

  private write(level: Level, args: unknown[]) {
    // Once made, the child checks the level itself.
    if (this.made || (this.root.isLevelEnabled?.(level) ?? true)) (this.real()[level] as (...a: unknown[]) => void)(...args)
  }

  get level() { return (this.made ?? this.root).level }
  set level(level: string) { this.real().level = level }
  /** What this child's own children ask: this child's answer once it exists, root's until then. */
  isLevelEnabled(level: string) { return (this.made ?? this.root).isLevelEnabled?.(level) ?? true }

  fatal(...args: unknown[]) { this.write('fatal', args) }
  error(...args: unknown[]) { this.write('error', args) }
  warn(...args: unknown[]) { this.write('warn', args) }
  info(...args: unknown[]) { this.write('info', args) }
  debug(...args: unknown[]) { this.write('debug', args) }
  trace(...args: unknown[]) { this.write('trace', args) }
  silent() {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return lazyChild(this, () => this.real().child(bindings, options), options)
  }
}
