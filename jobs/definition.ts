import { UnrecoverableError, type Job, type JobsOptions } from 'bullmq';
import type { z } from 'zod';
import type { QueueKey } from './queues.ts';

/**
 * One kind of job: its name, the queue it runs on, the zod schema of its payload, the options it
 * is always added with, and a thin processor that parses nothing itself and calls a service in
 * src/. `D` is what the processor needs (handed in by the worker that runs the queue).
 * Payloads hold ids only: BullMQ stores job data in clear text in Redis (R-TOK-11).
 */
export interface JobDefinition<P extends z.ZodType = z.ZodType, D = never, R = unknown> {
  readonly name: string;
  readonly queue: QueueKey;
  readonly payload: P;
  readonly options: JobsOptions;
  readonly process: (deps: D, data: z.output<P>, job: Job) => Promise<R>;
}

export function defineJob<P extends z.ZodType, D, R>(def: JobDefinition<P, D, R>): JobDefinition<P, D, R> {
  return def;
}

// A definition of any payload, deps and result: what lists and dispatchers hold.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJobDefinition = JobDefinition<z.ZodType, any>;

/**
 * Run a job with its definition: the payload is validated first (a malformed payload can never
 * succeed, so it fails at once instead of being retried).
 */
export async function runJob<P extends z.ZodType, D, R>(def: JobDefinition<P, D, R>, deps: D, job: Job): Promise<R> {
  const parsed = def.payload.safeParse(job.data);
  if (!parsed.success) {
    throw new UnrecoverableError(
      `${def.name}: malformed payload: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'} ${i.message}`).join('; ')}`,
    );
  }
  return def.process(deps, parsed.data, job);
}
