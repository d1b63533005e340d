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
  // Keep in step with the CSS below: grid columns are minmax(160px, 1fr) with an 8 px gap; list
  // images are 120 px wide.
  var GRID_MIN = 160;
  var GRID_GAP = 8;
  var LIST_WIDTH = 120;

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
    '.fmw-img{display:block;width:100%;height:auto;background:#e5e5e5 center/cover no-repeat}',
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

  /**
   * width/height so the page reserves the box before the image loads: the cover's own size when
   * the feed lists it (the largest entry of thumbnailSizes is the original), else media[0]'s.
   */
  function imageSize(post, sizes) {
    var top = sizes && sizes.length ? sizes[sizes.length - 1] : null;
    if (top) return { width: top.width, height: top.height };
    var m = post.media && post.media[0];
    var w = m && positive(m.width);
    var h = m && positive(m.height);
    if (w && h) return { width: w, height: h };
    var ar = typeof post.aspectRatio === 'number' && post.aspectRatio > 0 ? post.aspectRatio : null;
    if (ar) return { width: 1080, height: Math.max(1, Math.round(1080 / ar)) };
    return null;
  }

  /**
   * The usable entries of an image's `sizes` extension (feedmirror; absent on a plain v1 feed):
   * http(s) URLs with whole positive widths, smallest first.
   */
  function imageSizes(list) {
    if (!Array.isArray(list)) return [];
    var out = [];
    for (var i = 0; i < list.length; i++) {
      var s = list[i];
      if (!s || typeof s !== 'object') continue;
      var w = positive(s.width);
      var h = positive(s.height);
      if (!safeUrl(s.url) || !w || !h || typeof s.mime !== 'string') continue;
      out.push({ url: s.url, width: w, height: h, mime: s.mime });
    }
    return out.sort(function (a, b) {
      return a.width - b.width;
    });
  }

  /**
   * `srcset` for one format: its own entries plus every other entry the browser can always show
   * (JPEG, PNG, WebP), so the ladder keeps its top (the original). A candidate whose width is
   * already listed is skipped. Empty string when fewer than two candidates (src is enough).
   */
  function srcsetFor(sizes, mime) {
    var byWidth = {};
    for (var i = 0; i < sizes.length; i++) {
      var s = sizes[i];
      if (s.mime !== mime && !/^image\/(jpeg|png|webp)$/.test(s.mime)) continue;
      // One candidate per width; this format's own one wins.
      if (!byWidth[s.width] || s.mime === mime) byWidth[s.width] = s;
    }
    var widths = Object.keys(byWidth)
      .map(Number)
      .sort(function (a, b) {
        return a - b;
      });
    if (widths.length < 2) return '';
    // Spaces and commas would split a srcset entry: percent-encode them.
    return widths
      .map(function (w) {
        return byWidth[w].url.replace(/ /g, '%20').replace(/,/g, '%2C') + ' ' + w + 'w';
      })
      .join(', ');
  }

  /** Formats offered besides the ones every browser shows (AVIF): each becomes a <source>. */
  function extraFormats(sizes) {
    var out = [];
    for (var i = 0; i < sizes.length; i++) {
      var m = sizes[i].mime;
      if (m === 'image/avif' && out.indexOf(m) < 0) out.push(m);
    }
    return out;
  }

  /** The srcset of the widely shown formats: WebP where the feed has it, else the original's. */
  function baseFormat(sizes) {
    for (var i = 0; i < sizes.length; i++) if (sizes[i].mime === 'image/webp') return 'image/webp';
    return sizes.length ? sizes[sizes.length - 1].mime : 'image/jpeg';
  }

  /**
   * The CSS width an image fills, for `sizes`: a grid column computed from the widget's own width
   * (the columns are auto-fill, so no media query could say it), or the list's fixed width. Grid
   * tiles crop to a square (object-fit: cover), so a landscape image fills the square's height
   * and needs its aspect ratio times the column's width.
   */
  function slotWidth(layout, containerWidth, aspect) {
    if (layout === 'list') return LIST_WIDTH;
    if (!(containerWidth > 0)) return null;
    var cols = Math.max(1, Math.floor((containerWidth + GRID_GAP) / (GRID_MIN + GRID_GAP)));
    var col = (containerWidth - GRID_GAP * (cols - 1)) / cols;
    return Math.ceil(col * Math.max(1, aspect || 1));
  }

  /** `sizes` for an image: its slot in px, or a guess by viewport while the widget has no width yet. */
  function sizesAttr(layout, containerWidth, aspect) {
    var w = slotWidth(layout, containerWidth, aspect);
    return w ? w + 'px' : '(max-width: 480px) 50vw, 200px';
  }

  /** A `placeholder` extension: its colour when it is a #rrggbb, its ThumbHash bytes when base64. */
  function placeholderOf(ph) {
    if (!ph || typeof ph !== 'object') return null;
    var color = typeof ph.color === 'string' && /^#[0-9a-fA-F]{6}$/.test(ph.color) ? ph.color : null;
    var hash = null;
    if (typeof ph.thumbhash === 'string' && /^[A-Za-z0-9+/]+={0,2}$/.test(ph.thumbhash) && ph.thumbhash.length <= 200) {
      try {
        var bin = atob(ph.thumbhash);
        hash = [];
        for (var i = 0; i < bin.length; i++) hash.push(bin.charCodeAt(i));
        if (hash.length < 5) hash = null;
      } catch (e) {
        hash = null;
      }
    }
    return color || hash ? { color: color, hash: hash } : null;
  }

  /*
   * thumbHashToRGBA from the thumbhash package by Evan Wallace (MIT License,
   * https://github.com/evanw/thumbhash), written out in ES5 here: the widget is one
   * dependency-free file with no build step. Turns the ~25-byte hash into a small RGBA image.
   */
  function thumbHashToRGBA(hash) {
    var PI = Math.PI,
      min = Math.min,
      max = Math.max,
      cos = Math.cos,
      round = Math.round;
    var header24 = hash[0] | (hash[1] << 8) | (hash[2] << 16);
    var header16 = hash[3] | (hash[4] << 8);
    var l_dc = (header24 & 63) / 63;
    var p_dc = ((header24 >> 6) & 63) / 31.5 - 1;
    var q_dc = ((header24 >> 12) & 63) / 31.5 - 1;
    var l_scale = ((header24 >> 18) & 31) / 31;
    var hasAlpha = header24 >> 23;
    var p_scale = ((header16 >> 3) & 63) / 63;
    var q_scale = ((header16 >> 9) & 63) / 63;
    var isLandscape = header16 >> 15;
    var lx = max(3, isLandscape ? (hasAlpha ? 5 : 7) : header16 & 7);
    var ly = max(3, isLandscape ? header16 & 7 : hasAlpha ? 5 : 7);
    var a_dc = hasAlpha ? (hash[5] & 15) / 15 : 1;
    var a_scale = (hash[5] >> 4) / 15;
    var ac_start = hasAlpha ? 6 : 5;
    var ac_index = 0;
    function decodeChannel(nx, ny, scale) {
      var ac = [];
      for (var cy = 0; cy < ny; cy++)
        for (var cx = cy ? 0 : 1; cx * ny < nx * (ny - cy); cx++) {
          ac.push((((hash[ac_start + (ac_index >> 1)] >> ((ac_index & 1) << 2)) & 15) / 7.5 - 1) * scale);
          ac_index++;
        }
      return ac;
    }
    var l_ac = decodeChannel(lx, ly, l_scale);
    var p_ac = decodeChannel(3, 3, p_scale * 1.25);
    var q_ac = decodeChannel(3, 3, q_scale * 1.25);
    var a_ac = hasAlpha && decodeChannel(5, 5, a_scale);
    var ratio = thumbHashRatio(hash);
    var w = round(ratio > 1 ? 32 : 32 * ratio);
    var h = round(ratio > 1 ? 32 / ratio : 32);
    var rgba = new Uint8ClampedArray(w * h * 4),
      fx = [],
      fy = [];
    for (var y = 0, i = 0; y < h; y++) {
      for (var x = 0; x < w; x++, i += 4) {
        var l = l_dc,
          p = p_dc,
          q = q_dc,
          a = a_dc,
          cx,
          cy,
          j,
          n,
          fy2;
        for (cx = 0, n = max(lx, hasAlpha ? 5 : 3); cx < n; cx++) fx[cx] = cos((PI / w) * (x + 0.5) * cx);
        for (cy = 0, n = max(ly, hasAlpha ? 5 : 3); cy < n; cy++) fy[cy] = cos((PI / h) * (y + 0.5) * cy);
        for (cy = 0, j = 0; cy < ly; cy++)
          for (cx = cy ? 0 : 1, fy2 = fy[cy] * 2; cx * ly < lx * (ly - cy); cx++, j++) l += l_ac[j] * fx[cx] * fy2;
        for (cy = 0, j = 0; cy < 3; cy++)
          for (cx = cy ? 0 : 1, fy2 = fy[cy] * 2; cx < 3 - cy; cx++, j++) {
            var f = fx[cx] * fy2;
            p += p_ac[j] * f;
            q += q_ac[j] * f;
          }
        if (hasAlpha)
          for (cy = 0, j = 0; cy < 5; cy++)
            for (cx = cy ? 0 : 1, fy2 = fy[cy] * 2; cx < 5 - cy; cx++, j++) a += a_ac[j] * fx[cx] * fy2;
        var b = l - (2 / 3) * p;
        var r = (3 * l - b + q) / 2;
        var g = r - q;
        rgba[i] = max(0, 255 * min(1, r));
        rgba[i + 1] = max(0, 255 * min(1, g));
        rgba[i + 2] = max(0, 255 * min(1, b));
        rgba[i + 3] = max(0, 255 * min(1, a));
      }
    }
    return { w: w, h: h, rgba: rgba };
  }

  function thumbHashRatio(hash) {
    var header = hash[3];
    var hasAlpha = hash[2] & 0x80;
    var isLandscape = hash[4] & 0x80;
    var lx = isLandscape ? (hasAlpha ? 5 : 7) : header & 7;
    var ly = isLandscape ? header & 7 : hasAlpha ? 5 : 7;
    return lx / ly;
  }

  /** The ThumbHash as a data: URL (through a canvas), or null where there is no canvas. */
  function thumbHashDataUrl(hash) {
    try {
      var img = thumbHashToRGBA(hash);
      var canvas = document.createElement('canvas');
      canvas.width = img.w;
      canvas.height = img.h;
      var ctx = canvas.getContext('2d');
      if (!ctx) return null;
      var data = ctx.createImageData(img.w, img.h);
      data.data.set(img.rgba);
      ctx.putImageData(data, 0, 0);
      return canvas.toDataURL();
    } catch (e) {
      return null;
    }
  }

  /**
   * Paint the placeholder behind the image until it has loaded (or failed): the colour at once,
   * the ThumbHash over it. Set through the CSSOM (element.style), which a page's CSP allows where
   * a style attribute would not be.
   */
  function paintPlaceholder(img, ph) {
    if (!ph) return;
    if (ph.color) img.style.backgroundColor = ph.color;
    var url = ph.hash ? thumbHashDataUrl(ph.hash) : null;
    if (url) img.style.backgroundImage = 'url("' + url + '")';
    var clear = function () {
      // A transparent image must not keep showing the placeholder through it.
      img.style.backgroundColor = '';
      img.style.backgroundImage = '';
      img.removeEventListener('load', clear);
      img.removeEventListener('error', clear);
    };
    img.addEventListener('load', clear);
    img.addEventListener('error', clear);
  }

  /**
   * The visual of a post: an <img> with width/height (no layout shift), src (the original, what a
   * browser without srcset shows), srcset/sizes from the `sizes` extension, a <picture> with a
   * <source> per extra format (AVIF), and the placeholder. On a plain v1 feed: just the <img>.
   */
  function pictureFor(post, feed, opts) {
    var img = el('img', 'fmw-img');
    img.setAttribute('alt', altText(post, feed));
    img.setAttribute('loading', 'lazy');
    img.setAttribute('decoding', 'async');
    var sizes = imageSizes(post.thumbnailSizes);
    var size = imageSize(post, sizes);
    if (size) {
      img.setAttribute('width', String(size.width));
      img.setAttribute('height', String(size.height));
    }
    var aspect = size ? size.width / size.height : 1;
    var sizesValue = sizesAttr(opts.layout, opts.width, aspect);
    var node = img;
    var extras = extraFormats(sizes);
    if (extras.length) {
      node = el('picture', 'fmw-picture');
      for (var i = 0; i < extras.length; i++) {
        var set = srcsetFor(sizes, extras[i]);
        if (!set) continue;
        var source = document.createElement('source');
        source.setAttribute('type', extras[i]);
        source.setAttribute('srcset', set);
        source.setAttribute('sizes', sizesValue);
        node.appendChild(source);
      }
      node.appendChild(img);
    }
    var srcset = srcsetFor(sizes, baseFormat(sizes));
    if (srcset) {
      img.setAttribute('srcset', srcset);
      img.setAttribute('sizes', sizesValue);
    }
    img.setAttribute('data-fmw-aspect', String(aspect));
    paintPlaceholder(img, placeholderOf(post.thumbnailPlaceholder));
    // src last: with srcset and sizes already set, the browser fetches the right candidate only.
    img.setAttribute('src', post.thumbnailUrl);
    return node;
  }

  /** When the widget's width changes, so does a grid column: `sizes` follows (the browser may then fetch a larger candidate). */
  function followWidth(wrap, layout) {
    if (layout !== 'grid' || typeof root.ResizeObserver !== 'function') return;
    var last = wrap.clientWidth;
    new root.ResizeObserver(function () {
      var w = wrap.clientWidth;
      if (!w || w === last) return;
      last = w;
      var nodes = wrap.querySelectorAll('img[sizes], source[sizes]');
      for (var i = 0; i < nodes.length; i++) {
        var img = nodes[i].tagName === 'IMG' ? nodes[i] : nodes[i].parentNode.querySelector('img');
        var aspect = Number(img && img.getAttribute('data-fmw-aspect')) || 1;
        nodes[i].setAttribute('sizes', sizesAttr(layout, w, aspect));
      }
    }).observe(wrap);
  }

  /** What to draw for a post: chosen from `type`, never from `format` (R-SCH-10). */
  function cardKind(post) {
    if (post.type === 'link' && post.link && safeUrl(post.link.url)) return 'link';
    if ((post.type === 'image' || post.type === 'video' || post.type === 'carousel') && safeUrl(post.thumbnailUrl))
      return 'visual';
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

  function renderPost(post, feed, opts) {
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
      a.appendChild(pictureFor(post, feed, opts));
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
      var domain =
        post.link.domain ||
        (function () {
          try {
            return new URL(href).hostname;
          } catch (e) {
            return '';
          }
        })();
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
    wrap.appendChild(list);
    container.textContent = '';
    // In the page before the posts are made, so its width is known for `sizes`.
    container.appendChild(wrap);
    var itemOpts = { layout: opts.layout, width: list.clientWidth };
    var posts = feed.posts.slice(0, opts.limit);
    for (var i = 0; i < posts.length; i++) {
      var p = posts[i];
      if (p && typeof p === 'object') list.appendChild(renderPost(p, feed, itemOpts));
    }
    followWidth(list, opts.layout);
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
    var opts = {
      layout: parseLayout(container.getAttribute('data-layout')),
      limit: parseLimit(container.getAttribute('data-limit')),
    };
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
    helpers: {
      safeUrl: safeUrl,
      parseLimit: parseLimit,
      parseLayout: parseLayout,
      firstWords: firstWords,
      altText: altText,
      imageSize: imageSize,
      cardKind: cardKind,
      imageSizes: imageSizes,
      srcsetFor: srcsetFor,
      slotWidth: slotWidth,
      placeholderOf: placeholderOf,
      thumbHashToRGBA: thumbHashToRGBA,
    },
  };

  if (typeof document !== 'undefined') {
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', mountAll);
    else mountAll();
  }
})(typeof window !== 'undefined' ? window : globalThis);
