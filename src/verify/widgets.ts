import { isDeepStrictEqual } from 'node:util';
import { widgetDocumentKey, widgetFragmentKey } from '../storage/keys.ts';
import { listWidgets, type StoredWidget } from '../store/widgets.ts';
import { widgetDocumentSchema } from '../schema/widget-document.ts';
import { buildWidgetDocument, publishWidgetDocument, type WidgetDeps } from '../widgets/publish.ts';
import type { VerifyFinding } from '../store/verify-runs.ts';
import { redactText } from '../util/redact.ts';
import { isPublishedWidget, publishWidget, WIDGET_KEY, widgetAssets } from '../embed/index.ts';

/**
 * Verify's view of the widgets: each widget's two public objects (widgets/<id>.json and .html)
 * are in storage, and the document is what the database and the published feeds would give now
 * (R-WID-2, R-WID-5). A widget whose republication was missed (storage down when its source feed
 * changed, a crash between the two writes) shows a site old posts, or none; the daily verify and
 * `feedmirror verify` name it, and the repair publishes it again through publishWidgetDocument,
 * the one path the CLI, the dashboard and the worker publish widgets by.
 */
export type WidgetProblemKind =
  /** A widget's document or fragment is not in storage: the embed shows nothing. */
  | 'widget-missing'
  /** The widget document is not JSON or not the widget contract. */
  | 'widget-invalid'
  /** The widget document is not what the database and the feeds would publish now. */
  | 'widget-stale';

/** The widget script (widget/feedmirror-widget.js), which every embed loads. */
export type WidgetScriptProblemKind =
  /** Not in storage: every site embedding a feed or a widget shows nothing. */
  | 'widget-script-missing'
  /** Not what publishWidget writes (another release's script, damaged, another type or caching). */
  | 'widget-script-stale';

export interface WidgetScriptProblem extends VerifyFinding {
  kind: WidgetScriptProblemKind;
  key: string;
}

export interface WidgetProblem extends VerifyFinding {
  kind: WidgetProblemKind;
  key: string;
  widgetId: string;
}

/** The widgets to check: all, or those that merge one account. */
async function widgetsToCheck(deps: WidgetDeps, accountId: string | undefined): Promise<StoredWidget[]> {
  const all = await listWidgets(deps.db);
  return accountId === undefined ? all : all.filter((w) => w.accountIds.includes(accountId));
}

/** Check every widget (or those of one account); returns how many were checked. */
export async function checkWidgets(
  deps: WidgetDeps,
  accountId: string | undefined,
  problems: WidgetProblem[],
): Promise<number> {
  const widgets = await widgetsToCheck(deps, accountId);
  for (const widget of widgets) {
    const documentKey = widgetDocumentKey(widget.id);
    const fragmentKey = widgetFragmentKey(widget.id);
    const named = `widget ${widget.id} (${widget.name})`;
    const stored = await deps.storage.get(documentKey);
    if (!stored) {
      problems.push({
        kind: 'widget-missing',
        widgetId: widget.id,
        key: documentKey,
        detail: `${named}: its document is not in storage; sites embedding it show nothing`,
      });
      continue;
    }
    if (!(await deps.storage.head(fragmentKey)))
      problems.push({
        kind: 'widget-missing',
        widgetId: widget.id,
        key: fragmentKey,
        detail: `${named}: its static fragment is not in storage`,
      });
    let json: unknown;
    try {
      json = JSON.parse(stored.body.toString('utf8'));
    } catch {
      json = undefined;
    }
    const parsed = json === undefined ? undefined : widgetDocumentSchema.safeParse(json);
    if (!parsed?.success) {
      problems.push({
        kind: 'widget-invalid',
        widgetId: widget.id,
        key: documentKey,
        detail: `${named}: ${parsed ? 'not a widget document' : 'not JSON'}`,
      });
      continue;
    }
    // The document as it would be published now, compared without its generatedAt.
    const now = JSON.parse(JSON.stringify(await buildWidgetDocument(deps, widget))) as Record<string, unknown>;
    const { generatedAt: _storedAt, ...storedContent } = json as Record<string, unknown>;
    const { generatedAt: _nowAt, ...nowContent } = now;
    if (!isDeepStrictEqual(storedContent, nowContent))
      problems.push({
        kind: 'widget-stale',
        widgetId: widget.id,
        key: documentKey,
        detail: `${named}: the document in storage is not what its accounts' feeds and its settings give now (${differences(storedContent, nowContent)})`,
      });
  }
  return widgets.length;
}

/** The top-level fields that differ, for the report ("posts, staleSince"). */
function differences(a: Record<string, unknown>, b: Record<string, unknown>): string {
  const fields = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => !isDeepStrictEqual(a[k], b[k]));
  return fields.length > 0 ? `differs in ${fields.join(', ')}` : 'differs';
}

/** Publish again each widget a problem names (rewritten even when its publication row matches). */
export async function repairWidgets(
  deps: WidgetDeps,
  problems: readonly WidgetProblem[],
): Promise<Array<VerifyFinding & { kind: 'republished' | 'repair-failed' }>> {
  const done: Array<VerifyFinding & { kind: 'republished' | 'repair-failed' }> = [];
  for (const widgetId of new Set(problems.map((p) => p.widgetId))) {
    const key = widgetDocumentKey(widgetId);
    try {
      const out = await publishWidgetDocument(deps, widgetId, { rewrite: true });
      if (out.outcome !== 'missing')
        done.push({ kind: 'republished', key, detail: `widget ${widgetId} published again (${out.posts} posts)` });
    } catch (err) {
      done.push({
        kind: 'repair-failed',
        key,
        detail: `could not publish widget ${widgetId} again: ${redactText(err instanceof Error ? err.message : String(err))}`,
      });
    }
  }
  return done;
}

/** The widget script and its stylesheet: in storage, and what publishWidget would write (the same test it makes). */
export async function checkWidgetScript(
  storage: WidgetDeps['storage'],
  problems: WidgetScriptProblem[],
): Promise<void> {
  for (const asset of await widgetAssets()) {
    const stored = await storage.get(asset.key);
    if (!stored)
      problems.push({
        kind: 'widget-script-missing',
        key: asset.key,
        detail:
          asset.key === WIDGET_KEY
            ? 'the widget script is not in storage: every site embedding a feed or a widget shows nothing'
            : 'the widget stylesheet is not in storage: sites with a strict style-src policy show the widget unstyled',
      });
    else if (!isPublishedWidget(stored, asset.body, asset.contentType))
      problems.push({
        kind: 'widget-script-stale',
        key: asset.key,
        detail: `the stored ${asset.key === WIDGET_KEY ? 'script' : 'stylesheet'} is not this release's (${stored.body.length} bytes, ${stored.contentType ?? 'no type'}, ${stored.cacheControl ?? 'no caching'})`,
      });
  }
}

/** Publish the script again, as the worker does when it starts. */
export async function repairWidgetScript(
  storage: WidgetDeps['storage'],
): Promise<VerifyFinding & { kind: 'republished' | 'repair-failed' }> {
  try {
    const out = await publishWidget(storage);
    return { kind: 'republished', key: out.key, detail: 'the widget script published again' };
  } catch (err) {
    return {
      kind: 'repair-failed',
      key: WIDGET_KEY,
      detail: `could not publish the widget script again: ${redactText(err instanceof Error ? err.message : String(err))}`,
    };
  }
}
