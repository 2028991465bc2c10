// W3C Trace Context: a request's `traceparent` puts its trace id on its log lines. A malformed header
// or all-zero ids are ignored: tracing never refuses a request.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

export function traceBindings(
  header: string | string[] | undefined,
): { trace_id: string; parent_span_id: string } | undefined {
  if (typeof header !== 'string') return undefined
  const match = TRACEPARENT.exec(header.trim())
  if (!match) return undefined
  const [, version, traceId, parentId] = match as unknown as [string, string, string, string]
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(parentId)) return undefined
  return { trace_id: traceId, parent_span_id: parentId }
}
