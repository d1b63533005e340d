import { context, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';

/**
 * OpenTelemetry traces, on only when OTEL_EXPORTER_OTLP_ENDPOINT is set. Off, nothing is loaded
 * but the small API package, and every helper here returns at its first line (`enabled` is
 * false): no span objects, no context switches. On, the SDK and the OTLP/HTTP exporter are
 * loaded at start (dynamic imports), spans go out in batches, and log lines carry the ids of the
 * span they were written in (`trace_id`, `span_id`).
 *
 * The SDK modules are imported by name at run time: a process without tracing never loads them,
 * and they are typed here by the little this module uses.
 */
export const TRACER_NAME = 'feedmirror';

let enabled = false;

export function tracingOn(): boolean {
  return enabled;
}

export interface TracingSettings {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base address; spans go to <it>/v1/traces. */
  endpoint: string;
  /** OTEL_SERVICE_NAME. */
  serviceName: string;
}

export interface Tracing {
  /** Send what is buffered and stop. */
  shutdown(): Promise<void>;
}

interface TracerProviderLike {
  register(): void;
  shutdown(): Promise<void>;
}

const load = (name: string): Promise<Record<string, unknown>> => import(name) as Promise<Record<string, unknown>>;

export async function startTracing(settings: TracingSettings): Promise<Tracing> {
  const [node, exporterModule, resources] = await Promise.all([
    load('@opentelemetry/sdk-trace-node'),
    load('@opentelemetry/exporter-trace-otlp-http'),
    load('@opentelemetry/resources'),
  ]);
  const NodeTracerProvider = node.NodeTracerProvider as new (o: unknown) => TracerProviderLike;
  const BatchSpanProcessor = node.BatchSpanProcessor as new (e: unknown, o?: unknown) => unknown;
  const OTLPTraceExporter = exporterModule.OTLPTraceExporter as new (o: unknown) => unknown;
  const resourceFromAttributes = resources.resourceFromAttributes as (a: Attributes) => unknown;
  const url = `${settings.endpoint.replace(/\/+$/, '')}/v1/traces`;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: 1000 })],
  });
  provider.register(); // the global tracer provider and an AsyncLocalStorage context manager
  enabled = true;
  return {
    async shutdown() {
      enabled = false;
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

/** Run `fn` in a span named `name` (its child spans and log lines carry its ids); just `fn` when off. */
export async function inSpan<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  if (!enabled) return fn();
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).name });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The ids of the span a log line is written in, for pino's mixin; empty when off or outside a span. */
export function activeTraceIds(): { trace_id?: string; span_id?: string } {
  if (!enabled) return {};
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx ? { trace_id: ctx.traceId, span_id: ctx.spanId } : {};
}

/**
 * Run some async methods of an object in spans (`<prefix> <method>`), patched on the object itself
 * (a pool keeps its own state: a wrapper object would split it). Nothing happens when tracing is
 * off. For storage and the database pool, where they are built.
 */
export function addSpans<T extends object>(
  target: T,
  prefix: string,
  methods: ReadonlyArray<keyof T & string>,
  attributes: Attributes = {},
): T {
  if (!enabled) return target;
  for (const m of methods) {
    const original = target[m];
    if (typeof original !== 'function') continue;
    const bound = (original as (...a: unknown[]) => Promise<unknown>).bind(target);
    (target as Record<string, unknown>)[m] = (...args: unknown[]) =>
      inSpan(`${prefix} ${m}`, attributes, () => bound(...args));
  }
  return target;
}
