import type { Telemetry } from 'bullmq';

/**
 * BullMQ's own traces (bullmq-otel): a span for each job added and each job processed, linked
 * across processes through the job's metadata, so a sync's span and its copies' spans share a
 * trace. Set once at start (src/cli/start) when tracing is on; every Queue, Worker and
 * FlowProducer built afterwards takes `telemetryOptions()`. Off, they get nothing.
 */
let telemetry: Telemetry | undefined;

export async function enableJobTelemetry(): Promise<void> {
  // Loaded only when tracing is on (see src/util/tracing.ts).
  const name = 'bullmq-otel';
  const { BullMQOtel } = (await import(name)) as { BullMQOtel: new (o: { tracerName: string }) => Telemetry };
  telemetry = new BullMQOtel({ tracerName: 'feedmirror-bullmq' });
}

export function disableJobTelemetry(): void {
  telemetry = undefined;
}

export function telemetryOptions(): { telemetry?: Telemetry } {
  return telemetry ? { telemetry } : {};
}
