import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The run's history, Jepsen-style: one JSON object a line, the plan first (seed, every planned
 * fault and owner action), then what happened as it happened (faults started and ended, owners'
 * posts, operator actions with their exit codes, recoveries, violations) and the report last.
 * The same seed draws the same plan (schedule.ts), so a run is replayed by its seed; the history
 * says what the system did with it, to compare two runs of one seed line by line.
 */
export class History {
  private readonly out: WriteStream;

  constructor(readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
    this.out = createWriteStream(file, { flags: 'w' });
  }

  write(event: Record<string, unknown>): void {
    this.out.write(`${JSON.stringify(event)}\n`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.out.end(resolve));
  }
}
