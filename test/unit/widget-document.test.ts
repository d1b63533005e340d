import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  defaultWidgetOptions,
  widgetDocumentSchema,
  widgetOptionsSchema,
  WIDGET_ID_PATTERN,
} from '../../src/schema/widget-document.ts';

const feed = JSON.parse(readFileSync(new URL('../fixtures/feed-v1-valid.json', import.meta.url), 'utf8'));

describe('the widget document contract', () => {
  it('the default options are the documented ones', () => {
    expect(defaultWidgetOptions()).toEqual({
      limit: 12,
      maxPosts: 60,
      columns: { phone: 2, tablet: 3, desktop: 4 },
      header: true,
      captions: 'hover',
      date: true,
      badges: true,
      radius: 8,
      gap: 8,
      theme: 'auto',
      filters: { types: [], includeTags: [], excludeTags: [] },
    });
  });

  it('options: an unknown key, a wrong value and a limit above maxPosts are refused, naming what is wrong', () => {
    const unknown = widgetOptionsSchema.safeParse({ colums: 3 });
    expect(unknown.success).toBe(false);
    expect(JSON.stringify(unknown.error?.issues)).toContain('colums');
    const layout = widgetOptionsSchema.safeParse({ theme: 'blue', radius: -1 });
    expect(layout.error?.issues.map((i) => i.message)).toEqual([
      'radius must be at least 0',
      'theme must be one of light, dark, auto',
    ]);
    expect(widgetOptionsSchema.safeParse({ limit: 70 }).error?.issues[0]?.message).toBe(
      'limit must not be more than maxPosts',
    );
  });

  it('tags are compared without # and in lower case, once each', () => {
    const o = widgetOptionsSchema.parse({ filters: { includeTags: ['#Sale', 'sale', 'NEW'] } });
    expect(o.filters.includeTags).toEqual(['sale', 'new']);
    expect(widgetOptionsSchema.safeParse({ filters: { excludeTags: ['two words'] } }).success).toBe(false);
  });

  it('a document with schema v1 posts plus accountId and username validates; a post without accountId does not', () => {
    const posts = feed.posts.map((p: object) => ({ ...p, accountId: 'demo', username: 'feedmirror.demo' }));
    const doc = {
      version: 1,
      id: 'w_abcdefgh23',
      name: 'Shop',
      generatedAt: '2026-03-01T10:00:00.000Z',
      staleSince: null,
      demo: true,
      layout: 'grid',
      options: defaultWidgetOptions(),
      accounts: [
        {
          id: 'demo',
          username: 'feedmirror.demo',
          displayName: 'feedmirror demo',
          profileUrl: 'https://example.com/feedmirror.demo/',
          avatarUrl: null,
        },
      ],
      posts,
      viewsUrl: null,
    };
    expect(widgetDocumentSchema.safeParse(doc).success).toBe(true);
    const { accountId: _a, ...bare } = posts[0];
    expect(widgetDocumentSchema.safeParse({ ...doc, posts: [bare] }).success).toBe(false);
    expect(WIDGET_ID_PATTERN.test('w_abcdefgh23')).toBe(true);
    expect(WIDGET_ID_PATTERN.test('w_ABCDEFGH23')).toBe(false);
  });
});
