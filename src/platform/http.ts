import type { z } from 'zod';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { redactUrl } from '../util/redact.ts';
import { MalformedResponseError, PlatformError, RateLimitedError, TransientError } from './errors.ts';
import {
  describeZodError,
  extractErrorInfo,
  failedBeforeSending,
  mapPlatformError,
  type Failure,
  type Operation,
} from './error-mapping.ts';
import { parseUsage, USAGE_WARN_PERCENT, type PlatformUsage } from './rate-limit.ts';
import type { CallPacer } from './pacing.ts';
import { inSpan } from '../util/tracing.ts';

/**
 * One platform HTTP call over global fetch: timeout, bounded body, JSON, zod, typed errors,
 * usage headers and bounded retries with full-jitter backoff. Knows no endpoint.
 */

export const BACKOFF_BASE_MS = 500;
export const BACKOFF_CAP_MS = 20_000;

/** How one request to the platform ended, as reported to a PlatformCallObserver. */
export type PlatformCallOutcome = 'ok' | 'error' | 'rate_limited' | 'transient';

/**
 * Told of every request sent to the platform (each attempt: a retried request reports once per
 * try, as the platform counts them against its budget). The metrics seam: the client knows no
 * Prometheus, the caller decides what to do with the figures.
 */
export interface PlatformCallObserver {
  onCall(operation: string, outcome: PlatformCallOutcome): void;
}

/** The outcome label of a failed attempt. */
export function callOutcomeOf(error: PlatformError): PlatformCallOutcome {
  if (error instanceof RateLimitedError) return 'rate_limited';
  if (error instanceof TransientError) return 'transient';
  return 'error';
}

export interface HttpOptions {
  clock: Clock;
  logger: Logger;
  timeoutMs: number;
  maxRetries: number;
  maxResponseBytes: number;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  /** Called with the usage figures of every graph response that carries them. */
  onUsage: (usage: PlatformUsage, operation: Operation) => void;
  observer?: PlatformCallObserver;
  /** Per-account budget (R-OWN-1): a call over it is not sent. */
  pacer?: CallPacer;
  /** The app this client calls for (feedmirror's name of it): every error it throws names it. */
  app?: string;
}

export interface CallSpec<T> {
  operation: Operation;
  url: URL;
  /** POST with a form body (the login's code exchange); GET otherwise. */
  form?: URLSearchParams;
  schema: z.ZodType<T>;
  /** Values this call carries (token, secret, code): scrubbed from anything kept. */
  secrets: readonly string[];
  /** Whether the call may be repeated once sent. False for the single-use code exchange. */
  idempotent: boolean;
  /** Graph calls report usage headers; the login host does not. */
  readsUsage: boolean;
  /** Counts every attempt, retries included. */
  counter?: { calls: number };
  /** The account whose budget this call spends (paced when the client has a pacer). */
  accountId?: string;
}

/** Full jitter: a uniform wait in [0, min(cap, base * 2^attempt)). */
export function backoffMs(
  attempt: number,
  random: () => number,
  baseMs = BACKOFF_BASE_MS,
  capMs = BACKOFF_CAP_MS,
): number {
  return Math.floor(random() * Math.min(capMs, baseMs * 2 ** attempt));
}

/** Big integer ids (user ids exceed 2^53) are quoted before parsing so no digit is lost. */
const BIG_ID_RE = /("(?:id|user_id)"\s*:\s*)(-?\d{16,})(?=\s*[,}\]])/g;

class BodyTooLarge extends Error {}

async function readBody(res: Response, maxBytes: number): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    // Refused without reading it.
    await res.body?.cancel().catch(() => undefined);
    throw new BodyTooLarge();
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function looksLikeHtml(text: string, contentType: string | null): boolean {
  return /html/i.test(contentType ?? '') || /^\s*</.test(text);
}

export class PlatformHttp {
  constructor(private readonly opts: HttpOptions) {}

  /** Run a call with retries; throws a PlatformError. */
  async call<T>(spec: CallSpec<T>): Promise<T> {
    try {
      return await this.callOnce(spec);
    } catch (error) {
      // The job layer holds this app's calls only, and health names the app (not the account).
      if (error instanceof PlatformError && this.opts.app !== undefined) error.app ??= this.opts.app;
      throw error;
    }
  }

  private async callOnce<T>(spec: CallSpec<T>): Promise<T> {
    const { maxRetries, sleep, random, logger } = this.opts;
    for (let attempt = 0; ; attempt++) {
      await this.pace(spec);
      // One span per request sent (OTEL_EXPORTER_OTLP_ENDPOINT; nothing when tracing is off).
      const outcome = await inSpan(
        `platform ${spec.operation}`,
        { 'feedmirror.platform.operation': spec.operation, 'feedmirror.platform.attempt': attempt + 1 },
        () => this.attempt(spec),
      );
      this.report(spec.operation, outcome.ok ? 'ok' : callOutcomeOf(outcome.error));
      if (outcome.ok) return outcome.value;
      const error = outcome.error;
      const retryable =
        attempt < maxRetries &&
        (outcome.sentMaybe ? spec.idempotent : true) &&
        (error instanceof TransientError || (error instanceof MalformedResponseError && spec.idempotent));
      if (!retryable) {
        // A rate limit is the platform's budget, not a failure: the job layer waits it out
        // (R-OWN-1) and the caller says when it retries; at warn it read as an error on a terminal.
        (error instanceof RateLimitedError ? logger.info.bind(logger) : logger.warn.bind(logger))(
          {
            operation: spec.operation,
            error: error.name,
            status: error.status,
            code: error.code,
            subcode: error.subcode,
            attempts: attempt + 1,
          },
          'platform call failed',
        );
        throw error;
      }
      const wait = backoffMs(attempt, random);
      logger.info(
        { operation: spec.operation, error: error.name, status: error.status, attempt: attempt + 1, waitMs: wait },
        'platform call failed, retrying',
      );
      await sleep(wait);
    }
  }

  /**
   * R-OWN-1: an account over its own hourly budget does not call; the error says how long until
   * it may, and the job layer waits that out outside the job. Nothing was sent, nothing is reported.
   */
  private async pace(spec: CallSpec<unknown>): Promise<void> {
    const pacer = this.opts.pacer;
    if (!pacer || !spec.accountId) return;
    // The app first: while the platform holds the whole app (code 4, or its usage is high), none
    // of its accounts calls, and none of them spends its own budget on a call not sent.
    const appWaitMs = (await pacer.appWait?.()) ?? 0;
    if (appWaitMs > 0)
      throw new RateLimitedError(
        `${spec.operation}: held back: the app${this.opts.app ? ` ${this.opts.app}` : ''} is over the platform's app-wide limit; next call in about ${Math.ceil(appWaitMs / 1000)} s`,
        { operation: spec.operation, retryAfterMs: appWaitMs, paced: true },
      );
    const waitMs = await pacer.take(spec.accountId);
    if (waitMs <= 0) return;
    throw new RateLimitedError(
      `${spec.operation}: held back: the account's budget of ${pacer.callsPerHour} calls per hour is spent; next call in about ${Math.ceil(waitMs / 1000)} s`,
      { operation: spec.operation, retryAfterMs: waitMs, paced: true },
    );
  }

  /** Exactly one report per attempt; an observer that throws never fails the call. */
  private report(operation: Operation, outcome: PlatformCallOutcome): void {
    try {
      this.opts.observer?.onCall(operation, outcome);
    } catch (err) {
      this.opts.logger.warn({ operation, err }, 'platform call observer failed');
    }
  }

  private async attempt<T>(
    spec: CallSpec<T>,
  ): Promise<{ ok: true; value: T } | { ok: false; error: PlatformError; sentMaybe: boolean }> {
    const { clock, logger, timeoutMs, maxResponseBytes } = this.opts;
    const ctx = { operation: spec.operation, now: clock.now(), secrets: spec.secrets };
    const fail = (failure: Failure, sentMaybe = true) => ({
      ok: false as const,
      error: mapPlatformError(failure, { ...ctx, now: clock.now() }),
      sentMaybe,
    });
    if (spec.counter) spec.counter.calls++;
    const started = Date.now();
    let res: Response;
    try {
      res = await fetch(spec.url, {
        method: spec.form ? 'POST' : 'GET',
        body: spec.form ?? null,
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(timeoutMs),
        // A redirect would carry the token's query string to wherever it points (R-MED-6).
        redirect: 'manual',
      });
    } catch (error) {
      // The fetch error is never kept or logged: undici errors can hold the URL.
      return fail({ kind: 'transport', error, timeoutMs }, !failedBeforeSending(error));
    }

    let text: string;
    try {
      text = await readBody(res, maxResponseBytes);
    } catch (error) {
      if (error instanceof BodyTooLarge)
        return fail({
          kind: 'malformed',
          status: res.status,
          detail: `the body exceeds ${maxResponseBytes} bytes and was refused`,
        });
      return fail({ kind: 'transport', error, timeoutMs });
    }
    logger.debug(
      { operation: spec.operation, url: redactUrl(spec.url.toString()), status: res.status, ms: Date.now() - started },
      'platform call',
    );

    if (spec.readsUsage) {
      const usage = parseUsage(res.headers, clock.now());
      if (usage) {
        this.opts.onUsage(usage, spec.operation);
        if (usage.maxPercent > USAGE_WARN_PERCENT) {
          logger.warn(
            {
              operation: spec.operation,
              usagePercent: usage.maxPercent,
              regainAccessMinutes: usage.regainAccessMinutes,
            },
            'platform usage above 80%: calls may soon be throttled',
          );
        }
      }
    }

    let body: unknown;
    let parsedJson = true;
    try {
      body = text === '' ? undefined : JSON.parse(text.replace(BIG_ID_RE, '$1"$2"'));
    } catch {
      parsedJson = false;
    }

    if (res.status < 200 || res.status >= 300 || extractErrorInfo(body)) {
      // Error bodies are read leniently: an HTML 502 page is still a 502.
      return fail({ kind: 'response', status: res.status, body, headers: res.headers });
    }
    if (!parsedJson || body === undefined) {
      const detail = looksLikeHtml(text, res.headers.get('content-type'))
        ? 'an HTML page instead of JSON'
        : text === ''
          ? 'an empty body instead of JSON'
          : 'a body that is not valid JSON';
      return fail({ kind: 'malformed', status: res.status, detail });
    }
    const parsed = spec.schema.safeParse(body);
    if (!parsed.success) return fail({ kind: 'malformed', status: res.status, detail: describeZodError(parsed.error) });
    return { ok: true, value: parsed.data };
  }
}
