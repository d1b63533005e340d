/*! feedmirror widget: renders a schema v1 feed on any page. Usage:
 *   <div data-feedmirror-feed="https://bucket.example/feeds/123.json" data-layout="grid" data-limit="12"></div>
 *   <script defer src="https://bucket.example/widget/feedmirror-widget.js"></script>
 * Plain ES2017, no dependencies. It reads a public JSON file and holds no secret (R-TOK-11).
 * Feed strings reach the page through textContent / setAttribute only, never as HTML.
 */
(function (root) {
  'use strict';

  var STYLE_ID = 'feedmirror-widget-style';
  var DEFAULT_LIMIT = 12;
  var MAX_LIMIT = 100;
  var ALT_WORDS = 12;
  var ALT_MAX = 120;

  // Scoped under .fmw: the host page's styles and ours stay apart.
  var CSS = [
    '.fmw{font:14px/1.4 system-ui,sans-serif;color:inherit}',
    '.fmw *{box-sizing:border-box}',
    '.fmw-demo{display:inline-block;margin:0 0 8px;padding:2px 8px;border-radius:4px;background:#fff3cd;color:#664d03;font-size:12px;font-weight:600}',
    '.fmw-list{list-style:none;margin:0;padding:0}',
    '.fmw--grid .fmw-list{display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:8px}',
    '.fmw--list .fmw-list{display:flex;flex-direction:column;gap:12px}',
    '.fmw-item{position:relative;margin:0}',
    '.fmw-link{display:block;color:inherit;text-decoration:none;border-radius:6px;overflow:hidden;background:#f3f3f3;height:100%}',
    '.fmw-img{display:block;width:100%;height:auto;background:#e5e5e5}',
    '.fmw--grid .fmw-img{aspect-ratio:1/1;object-fit:cover}',
    '.fmw--list .fmw-link{display:flex;gap:12px;align-items:flex-start}',
    '.fmw--list .fmw-img{width:120px;flex:none}',
    '.fmw-body{padding:8px;min-width:0;overflow-wrap:anywhere}',
    '.fmw--grid .fmw-visual .fmw-body{display:none}',
    '.fmw-text{margin:0;white-space:pre-line;overflow:hidden;display:-webkit-box;-webkit-line-clamp:6;-webkit-box-orient:vertical}',
    '.fmw-title{margin:0 0 4px;font-weight:600}',
    '.fmw-domain,.fmw-date{display:block;margin:4px 0 0;font-size:12px;opacity:.7}',
    '.fmw-badge{position:absolute;top:6px;right:6px;padding:1px 6px;border-radius:4px;background:rgba(0,0,0,.65);color:#fff;font-size:11px;font-weight:600;pointer-events:none}',
    '.fmw-error{margin:0;opacity:.7}',
  ].join('\n');

  /** Absolute http(s) only: a feed cannot smuggle javascript: links. */
  function safeUrl(value) {
    if (typeof value !== 'string' || !/^https?:\/\//i.test(value)) return null;
    return value;
  }

  /** data-limit: a positive integer, capped; else the default. */
  function parseLimit(value) {
    var n = parseInt(value, 10);
    if (!isFinite(n) || n < 1) return DEFAULT_LIMIT;
    return Math.min(n, MAX_LIMIT);
  }

  function parseLayout(value) {
    return value === 'list' ? 'list' : 'grid';
  }

  /** The first words of a caption, for alt text when the feed gives none. */
  function firstWords(text) {
    if (typeof text !== 'string') return '';
    var words = text.replace(/\s+/g, ' ').trim().split(' ').filter(Boolean);
    var out = words.slice(0, ALT_WORDS).join(' ');
    if (out.length > ALT_MAX) out = out.slice(0, ALT_MAX).replace(/\s+\S*$/, '');
    return out.length < words.join(' ').length ? out + '\u2026' : out;
  }

  function altText(post, feed) {
    var m = post.media && post.media[0];
    if (m && typeof m.alt === 'string' && m.alt.trim()) return m.alt.trim();
    var words = firstWords(post.text);
    if (words) return words;
    var who = feed && feed.origin && feed.origin.displayName;
    return typeof who === 'string' && who ? 'Post by ' + who : 'Post';
  }

  function positive(n) {
    return typeof n === 'number' && isFinite(n) && n > 0 ? Math.round(n) : null;
  }

  /** width/height so the page reserves the box before the image loads. */
  function imageSize(post) {
    var m = post.media && post.media[0];
    var w = m && positive(m.width);
    var h = m && positive(m.height);
    if (w && h) return { width: w, height: h };
    var ar = typeof post.aspectRatio === 'number' && post.aspectRatio > 0 ? post.aspectRatio : null;
    if (ar) return { width: 1080, height: Math.max(1, Math.round(1080 / ar)) };
    return null;
  }

  /** What to draw for a post: chosen from `type`, never from `format` (R-SCH-10). */
  function cardKind(post) {
    if (post.type === 'link' && post.link && safeUrl(post.link.url)) return 'link';
    if ((post.type === 'image' || post.type === 'video' || post.type === 'carousel') && safeUrl(post.thumbnailUrl)) return 'visual';
    // No usable cover: a text card, never an empty image (R-CNV-12).
    return 'text';
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null && text !== '') node.textContent = String(text);
    return node;
  }

  function injectStyle() {
    if (document.getElementById(STYLE_ID)) return;
    var style = document.createElement('style');
    style.id = STYLE_ID;
    style.textContent = CSS;
    (document.head || document.documentElement).appendChild(style);
  }

  function dateOf(post) {
    var d = new Date(post.publishedAt);
    if (isNaN(d.getTime())) return null;
    var t = el('time', 'fmw-date', d.toLocaleDateString());
    t.setAttribute('datetime', d.toISOString());
    return t;
  }

  function renderPost(post, feed) {
    var kind = cardKind(post);
    var li = el('li', 'fmw-item fmw-' + (kind === 'visual' ? 'visual' : 'card') + ' fmw-type-' + kind);
    li.setAttribute('data-post-id', String(post.id));
    var href = kind === 'link' ? safeUrl(post.link.url) : safeUrl(post.url);
    var a = el(href ? 'a' : 'div', 'fmw-link');
    if (href) {
      a.setAttribute('href', href);
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer');
    }
    var body = el('div', 'fmw-body');
    if (kind === 'visual') {
      var img = el('img', 'fmw-img');
      img.setAttribute('src', post.thumbnailUrl);
      img.setAttribute('alt', altText(post, feed));
      img.setAttribute('loading', 'lazy');
      var size = imageSize(post);
      if (size) {
        img.setAttribute('width', String(size.width));
        img.setAttribute('height', String(size.height));
      }
      a.appendChild(img);
      if (post.text) body.appendChild(el('p', 'fmw-text', post.text));
    } else if (kind === 'link') {
      var cover = safeUrl(post.link.imageUrl) || safeUrl(post.thumbnailUrl);
      if (cover) {
        var limg = el('img', 'fmw-img');
        limg.setAttribute('src', cover);
        limg.setAttribute('alt', post.link.title ? String(post.link.title) : altText(post, feed));
        limg.setAttribute('loading', 'lazy');
        a.appendChild(limg);
      }
      if (post.link.title) body.appendChild(el('p', 'fmw-title', post.link.title));
      if (post.text) body.appendChild(el('p', 'fmw-text', post.text));
      if (post.link.description) body.appendChild(el('p', 'fmw-text', post.link.description));
      var domain = post.link.domain || (function () { try { return new URL(href).hostname; } catch (e) { return ''; } })();
      if (domain) body.appendChild(el('p', 'fmw-domain', domain));
    } else {
      body.appendChild(el('p', 'fmw-text', post.text || ''));
    }
    var when = dateOf(post);
    if (when) body.appendChild(when);
    a.appendChild(body);
    li.appendChild(a);
    // format: badges only (R-SCH-10).
    if (post.format === 'reel') li.appendChild(el('span', 'fmw-badge', 'Reel'));
    return li;
  }

  function renderFeed(container, feed, opts) {
    var wrap = el('div', 'fmw fmw--' + opts.layout);
    // R-SCH-11: a demo feed carries a visible label.
    if (feed.demo === true) wrap.appendChild(el('p', 'fmw-demo', 'Demo feed'));
    var list = el('ul', 'fmw-list');
    var posts = feed.posts.slice(0, opts.limit);
    for (var i = 0; i < posts.length; i++) {
      var p = posts[i];
      if (p && typeof p === 'object') list.appendChild(renderPost(p, feed));
    }
    wrap.appendChild(list);
    container.textContent = '';
    container.appendChild(wrap);
  }

  function showError(container) {
    container.textContent = '';
    container.appendChild(el('p', 'fmw fmw-error', 'This feed could not be loaded right now.'));
  }

  function isFeed(data) {
    return !!data && typeof data === 'object' && data.schemaVersion === 1 && Array.isArray(data.posts);
  }

  function mount(container) {
    if (!container || container.getAttribute('data-feedmirror-state')) return Promise.resolve();
    var url = container.getAttribute('data-feedmirror-feed');
    var opts = { layout: parseLayout(container.getAttribute('data-layout')), limit: parseLimit(container.getAttribute('data-limit')) };
    container.setAttribute('data-feedmirror-state', 'loading');
    injectStyle();
    // The feed is public: send no cookies.
    return fetch(url, { credentials: 'omit', headers: { Accept: 'application/json' } })
      .then(function (res) {
        if (!res.ok) throw new Error('feed answered HTTP ' + res.status);
        return res.json();
      })
      .then(function (data) {
        if (!isFeed(data)) throw new Error('not a schema v1 feed');
        renderFeed(container, data, opts);
        container.setAttribute('data-feedmirror-state', 'ready');
      })
      .catch(function (err) {
        showError(container);
        container.setAttribute('data-feedmirror-state', 'error');
        if (root.console) root.console.warn('feedmirror widget: ' + (err && err.message ? err.message : err));
      });
  }

  function mountAll() {
    var nodes = document.querySelectorAll('[data-feedmirror-feed]');
    var jobs = [];
    for (var i = 0; i < nodes.length; i++) jobs.push(mount(nodes[i]));
    return Promise.all(jobs);
  }

  root.FeedMirrorWidget = {
    mount: mount,
    mountAll: mountAll,
    // Pure helpers, exposed for tests.
    helpers: { safeUrl: safeUrl, parseLimit: parseLimit, parseLayout: parseLayout, firstWords: firstWords, altText: altText, imageSize: imageSize, cardKind: cardKind },
  };

  if (typeof document !== 'undefined') {
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', mountAll);
    else mountAll();
  }
})(typeof window !== 'undefined' ? window : globalThis);
