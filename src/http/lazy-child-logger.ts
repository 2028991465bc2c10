import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions } from 'pino'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

interface Root {
  level: string
  isLevelEnabled?: (level: string) => boolean
}

/**
 * A child logger that pino makes only when it first writes at an enabled level: most requests
 * write no line, yet each made two children. The line is the same as the child's own. Options
 * that set a level of their own make the child at once.
 */
export function lazyChild(root: Root, make: () => FastifyBaseLogger, options?: ChildLoggerOptions): FastifyBaseLogger {
  return options?.level !== undefined ? make() : new LazyChild(root, make)
}

/** A class, not closures: two per request. */
class LazyChild implements FastifyBaseLogger, Root {
  private made: (FastifyBaseLogger & Root) | undefined
  constructor(
    private readonly root: Root,
    private readonly make: () => FastifyBaseLogger,
  ) {}

  private real(): FastifyBaseLogger & Root {
    return (this.made ??= this.make() as FastifyBaseLogger & Root)
  }

  private write(level: Level, args: unknown[]) {
    if (this.made || (this.root.isLevelEnabled?.(level) ?? true))
      (this.real()[level] as (...a: unknown[]) => void)(...args)
  }

  get level() {
    return (this.made ?? this.root).level
  }
  set level(level: string) {
    this.real().level = level
  }
  isLevelEnabled(level: string) {
    return (this.made ?? this.root).isLevelEnabled?.(level) ?? true
  }

  fatal(...args: unknown[]) {
    this.write('fatal', args)
  }
  error(...args: unknown[]) {
    this.write('error', args)
  }
  warn(...args: unknown[]) {
    this.write('warn', args)
  }
  info(...args: unknown[]) {
    this.write('info', args)
  }
  debug(...args: unknown[]) {
    this.write('debug', args)
  }
  trace(...args: unknown[]) {
    this.write('trace', args)
  }
  silent() {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return lazyChild(this, () => this.real().child(bindings, options), options)
  }
}
