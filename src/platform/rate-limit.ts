import { z } from 'zod';

/**
 * Usage headers of the platform (R-OWN-1). Rate limits are not published in the spec; the
 * platform reports usage in percent in `X-App-Usage` and `X-Business-Use-Case-Usage`, the latter
 * with an estimated time to regain access in minutes. Headers are hints: a malformed header is
 * ignored, it never fails a call.
 */

export const APP_USAGE_HEADER = 'x-app-usage';
export const BUC_USAGE_HEADER = 'x-business-use-case-usage';
/** Above this percentage of any usage figure a warning is logged. */
export const USAGE_WARN_PERCENT = 80;

const percent = z.coerce.number().nonnegative().optional();

const appUsageSchema = z.looseObject({
  call_count: percent,
  total_time: percent,
  total_cputime: percent,
});

const bucEntrySchema = z.looseObject({
  type: z.string().optional(),
  call_count: percent,
  total_time: percent,
  total_cputime: percent,
  estimated_time_to_regain_access: percent,
});

const bucUsageSchema = z.record(z.string(), z.array(bucEntrySchema));

export type AppUsage = z.infer<typeof appUsageSchema>;
export type BusinessUseCaseEntry = z.infer<typeof bucEntrySchema>;

export interface PlatformUsage {
  app?: AppUsage | undefined;
  businessUseCase?: Record<string, BusinessUseCaseEntry[]> | undefined;
  /** The highest percentage among all figures of both headers. */
  maxPercent: number;
  /** The highest figure of X-App-Usage alone: the whole app's share of its budget (0 when absent). */
  appPercent: number;
  /** Largest estimated_time_to_regain_access among business-use-case entries, in minutes. */
  regainAccessMinutes?: number | undefined;
  at: Date;
}

function parseJsonHeader<T>(value: string | null, schema: z.ZodType<T>): T | undefined {
  if (!value) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Usage figures from a response's headers; undefined when neither header is present and valid. */
export function parseUsage(headers: Headers, now: Date): PlatformUsage | undefined {
  const app = parseJsonHeader(headers.get(APP_USAGE_HEADER), appUsageSchema);
  const businessUseCase = parseJsonHeader(headers.get(BUC_USAGE_HEADER), bucUsageSchema);
  if (!app && !businessUseCase) return undefined;
  const figures: number[] = [];
  let regain: number | undefined;
  if (app) figures.push(app.call_count ?? 0, app.total_time ?? 0, app.total_cputime ?? 0);
  const appPercent = Math.max(0, ...figures);
  for (const entries of Object.values(businessUseCase ?? {})) {
    for (const e of entries) {
      figures.push(e.call_count ?? 0, e.total_time ?? 0, e.total_cputime ?? 0);
      if (e.estimated_time_to_regain_access !== undefined)
        regain = Math.max(regain ?? 0, e.estimated_time_to_regain_access);
    }
  }
  return {
    app,
    businessUseCase,
    maxPercent: Math.max(0, ...figures),
    appPercent,
    regainAccessMinutes: regain,
    at: now,
  };
}

/**
 * How long to wait before calling again (R-OWN-1): the business-use-case estimate (minutes) when
 * positive, else `Retry-After` (seconds or an HTTP date), else undefined (the job layer picks).
 */
export function retryAfterMs(headers: Headers, usage: PlatformUsage | undefined, now: Date): number | undefined {
  if (usage?.regainAccessMinutes !== undefined && usage.regainAccessMinutes > 0)
    return Math.round(usage.regainAccessMinutes * 60_000);
  const header = headers.get('retry-after')?.trim();
  if (!header) return undefined;
  if (/^\d+(\.\d+)?$/.test(header)) return Math.round(Number(header) * 1000);
  const at = Date.parse(header);
  if (Number.isFinite(at)) return Math.max(0, at - now.getTime());
  return undefined;
}
