import type { WidgetDocument, WidgetLayout, WidgetPost } from '../../schema/widget-document.ts';

/** A widget on the page, once enhanced: its document, its elements and what the lightbox shows. */
export interface Widget {
  /** Rendered by this script (false: a server fragment, enhanced in place). */
  fresh: boolean;
  doc: WidgetDocument;
  wrap: HTMLElement;
  layout: WidgetLayout;
  list: HTMLElement;
  /** The document's posts by keyOf (account id and post id). */
  byKey: Record<string, WidgetPost>;
  /** The document's host: the only host a video plays from (R-EMB-2). */
  host: string;
  ro?: ResizeObserver;
  box?: HTMLDialogElement;
  /** The lightbox's tile (its index in the list) and slide. */
  at: number;
  slide: number;
}
