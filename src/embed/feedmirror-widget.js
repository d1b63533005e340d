/*! feedmirror widget: renders a widget configured on the dashboard, or a schema v1 feed. Usage:
 *   <div data-feedmirror-widget="w_abcdefghij"></div>   (reads ../widgets/<id>.json beside this script)
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
  // As in the CSS: feed grid columns minmax(160px, 1fr), 8 px gap; list images 120 px.
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
    // Widgets: a site's --fm-* wins over the dashboard's --fmw-* (set on the root).
    '.fmw-w{--_fg:var(--fm-fg,#1a1a1a);--_bg:var(--fm-bg,#fff);--_ac:var(--fm-accent,#1d4ed8);--_af:var(--fm-accent-fg,#fff);--_r:var(--fm-radius,var(--fmw-r,8px));--_g:var(--fm-gap,var(--fmw-g,8px));--_c:var(--fmw-cp,2);position:relative;color:var(--_fg);background:var(--_bg);padding:var(--_g);border-radius:var(--_r)}',
    '.fmw--dark{--_fg:var(--fm-fg,#f2f2f2);--_bg:var(--fm-bg,#141414)}',
    // auto: the page's own colours (its text colour, no background of its own), whatever the
    // visitor's OS prefers; the lightbox takes the page's background (--fmw-pbg, set by the script).
    '.fmw--auto{--_fg:var(--fm-fg,currentColor);--_bg:var(--fm-bg,transparent)}',
    '.fmw--auto .fmw-box{background:var(--fm-bg,var(--fmw-pbg,#fff))}',
    '@media (min-width:600px){.fmw-w{--_c:var(--fmw-ct,3)}}',
    '@media (min-width:1024px){.fmw-w{--_c:var(--fmw-cd,4)}}',
    '.fmw-w .fmw-list{gap:var(--_g)}',
    '.fmw-w.fmw--grid .fmw-list{grid-template-columns:repeat(var(--_c),minmax(0,1fr))}',
    '.fmw--carousel .fmw-list{display:grid;grid-auto-flow:column;grid-auto-columns:calc((100% - (var(--_c) - 1) * var(--_g)) / var(--_c));overflow-x:auto;scroll-snap-type:x mandatory;overscroll-behavior-x:contain}',
    '.fmw--carousel .fmw-item{scroll-snap-align:start}',
    // Masonry reads left to right, newest first: a grid in rows; the script then packs each tile
    // under the shortest column (rows of 1px, each tile spanning its height plus the gap).
    '.fmw--masonry .fmw-list{display:grid;grid-template-columns:repeat(var(--_c),minmax(0,1fr));align-items:start}',
    '.fmw--masonry .fmw-packed{grid-auto-rows:1px;row-gap:0}',
    '.fmw-w .fmw-link{border-radius:var(--_r);background:rgba(128,128,128,.14);position:relative}',
    '.fmw-w.fmw--grid .fmw-img,.fmw--carousel .fmw-img{aspect-ratio:1/1;object-fit:cover}',
    '.fmw-w.fmw--grid .fmw-card .fmw-link,.fmw--carousel .fmw-card .fmw-link{aspect-ratio:1/1}',
    '.fmw-w .fmw-visual .fmw-body{display:block}',
    '.fmw-w:not(.fmw--list) .fmw-text{-webkit-line-clamp:3}',
    '.fmw-cap-hover:not(.fmw--list) .fmw-visual .fmw-body{position:absolute;left:0;right:0;bottom:0;background:rgba(0,0,0,.75);color:#fff;opacity:0;transition:opacity .15s}',
    '.fmw-cap-hover .fmw-visual:hover .fmw-body,.fmw-cap-hover .fmw-visual:focus-within .fmw-body{opacity:1}',
    '.fmw-w .fmw-date{opacity:.8}',
    '.fmw-head{display:flex;flex-wrap:wrap;gap:var(--_g);margin-bottom:var(--_g)}',
    '.fmw-acct{display:flex;align-items:center;gap:8px;flex:1 1 auto}',
    '.fmw-avatar{width:40px;height:40px;border-radius:50%;object-fit:cover;background:rgba(128,128,128,.2)}',
    '.fmw-user{color:inherit;font-weight:600;text-decoration:none;margin-right:auto}',
    '.fmw-follow,.fmw-more,.fmw-arr,.fmw-box button{border:0;border-radius:var(--_r);background:var(--_ac);color:var(--_af);font:inherit;font-weight:600;text-decoration:none;cursor:pointer;text-align:center}',
    '.fmw-follow{padding:6px 14px}',
    '.fmw-more{display:block;width:11em;height:2.75em;line-height:2.75em;padding:0;margin:var(--_g) auto 0}',
    '.fmw-rail{position:relative}',
    '.fmw-arr{position:absolute;top:50%;width:36px;height:36px;margin-top:-18px;padding:0;border-radius:50%;font-size:22px;line-height:36px}',
    '.fmw-prev{left:4px}.fmw-next{right:4px}',
    '.fmw-arr[aria-disabled=true]{opacity:.35;cursor:default}',
    '.fmw-w a:focus-visible,.fmw-w button:focus-visible{outline:3px solid var(--_ac);outline-offset:2px}',
    '.fmw-box{width:min(94vw,760px);max-height:94vh;padding:16px;border:0;border-radius:var(--_r);color:var(--_fg);background:var(--_bg)}',
    '.fmw-box::backdrop{background:rgba(0,0,0,.75)}',
    '.fmw-stage{position:relative;display:flex;align-items:center;justify-content:center;height:min(66vh,620px);margin-top:40px}',
    '.fmw-stage img,.fmw-stage video{display:block;max-width:100%;max-height:100%;width:auto;height:auto}',
    '.fmw-stage>a{display:flex;align-items:center;justify-content:center;width:100%;height:100%;color:inherit}',
    '.fmw-play{position:absolute;top:50%;left:50%;margin:-28px 0 0 -28px;width:56px;height:56px;border-radius:50%;background:rgba(0,0,0,.7);color:#fff;font-size:24px;line-height:56px;text-align:center;pointer-events:none}',
    '.fmw-box .fmw-x{position:absolute;top:8px;right:8px;width:36px;height:36px;font-size:22px;padding:0}',
    '.fmw-nav{display:flex;align-items:center;justify-content:center;gap:12px;margin:8px 0}',
    '.fmw-nav button{width:36px;height:36px;padding:0;font-size:22px}',
    '.fmw-nav [aria-disabled=true]{opacity:.45;cursor:default}',
    '.fmw-full{white-space:pre-line;overflow-wrap:anywhere}',
    '.fmw-info a{color:inherit}',
    '.fmw-sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}',
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

  /** width/height, so the box is reserved before the image loads: the largest size, else media[0]'s. */
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

  /** The usable entries of an image's `sizes` extension, smallest first. */
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

  /** `srcset` for one format, plus the JPEG/PNG/WebP entries of other widths; '' under two candidates. */
  function srcsetFor(sizes, mime) {
    var byWidth = {};
    for (var i = 0; i < sizes.length; i++) {
      var s = sizes[i];
      if (s.mime !== mime && !/^image\/(jpeg|png|webp)$/.test(s.mime)) continue;
      if (!byWidth[s.width] || s.mime === mime) byWidth[s.width] = s;
    }
    var widths = Object.keys(byWidth)
      .map(Number)
      .sort(function (a, b) {
        return a - b;
      });
    if (widths.length < 2) return '';
    return widths
      .map(function (w) {
        return byWidth[w].url.replace(/ /g, '%20').replace(/,/g, '%2C') + ' ' + w + 'w';
      })
      .join(', ');
  }

  /** Formats not every browser shows (AVIF): a <source> each. */
  function extraFormats(sizes) {
    var out = [];
    for (var i = 0; i < sizes.length; i++) {
      var m = sizes[i].mime;
      if (m === 'image/avif' && out.indexOf(m) < 0) out.push(m);
    }
    return out;
  }

  /** WebP where the feed has it, else the original's format. */
  function baseFormat(sizes) {
    for (var i = 0; i < sizes.length; i++) if (sizes[i].mime === 'image/webp') return 'image/webp';
    return sizes.length ? sizes[sizes.length - 1].mime : 'image/jpeg';
  }

  /** The CSS width a feed image fills (a square crop of a landscape image needs aspect x column). */
  function slotWidth(layout, containerWidth, aspect) {
    if (layout === 'list') return LIST_WIDTH;
    if (!(containerWidth > 0)) return null;
    var cols = Math.max(1, Math.floor((containerWidth + GRID_GAP) / (GRID_MIN + GRID_GAP)));
    var col = (containerWidth - GRID_GAP * (cols - 1)) / cols;
    return Math.ceil(col * Math.max(1, aspect || 1));
  }

  function sizesAttr(layout, containerWidth, aspect) {
    var w = slotWidth(layout, containerWidth, aspect);
    return w ? w + 'px' : '(max-width: 480px) 50vw, 200px';
  }

  /** A `placeholder` extension: #rrggbb colour and ThumbHash bytes. */
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

  /*! thumbHashToRGBA of the thumbhash package by Evan Wallace (MIT, github.com/evanw/thumbhash), in ES5. */
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

  /** The placeholder behind the image until it loads, through the CSSOM (a page's CSP allows it). */
  function paintPlaceholder(img, ph) {
    if (!ph) return;
    if (ph.color) img.style.backgroundColor = ph.color;
    var url = ph.hash ? thumbHashDataUrl(ph.hash) : null;
    if (url) img.style.backgroundImage = 'url("' + url + '")';
    var clear = function () {
      img.style.backgroundColor = '';
      img.style.backgroundImage = '';
      img.removeEventListener('load', clear);
      img.removeEventListener('error', clear);
    };
    img.addEventListener('load', clear);
    img.addEventListener('error', clear);
  }

  /** An image as a tree: width/height, srcset/sizes, <picture> for AVIF, placeholder colour. */
  function imgTree(url, list, size, alt, sizesFn, ph, cls, eager) {
    var sizes = imageSizes(list);
    size = (sizes.length && sizes[sizes.length - 1]) || size;
    var aspect = size ? size.width / size.height : 1;
    var sizesValue = sizesFn(aspect);
    var srcset = srcsetFor(sizes, baseFormat(sizes));
    var img = h('img', {
      class: cls,
      alt: alt,
      loading: eager ? null : 'lazy',
      decoding: 'async',
      width: size && size.width,
      height: size && size.height,
      srcset: srcset || null,
      sizes: srcset ? sizesValue : null,
      'data-fmw-aspect': aspect,
      style: ph && ph.color ? { 'background-color': ph.color } : null,
      // src last: srcset and sizes are known when the fetch starts.
      src: url,
    });
    var sources = [];
    var extras = extraFormats(sizes);
    for (var i = 0; i < extras.length; i++) {
      var set = srcsetFor(sizes, extras[i]);
      if (set) sources.push(h('source', { type: extras[i], srcset: set, sizes: sizesValue }));
    }
    return extras.length ? h('picture', { class: 'fmw-picture' }, sources.concat([img])) : img;
  }

  function pictureFor(post, feed, opts) {
    var ph = placeholderOf(post.thumbnailPlaceholder);
    var node = toDom(
      imgTree(
        post.thumbnailUrl,
        post.thumbnailSizes,
        imageSize(post, []),
        altText(post, feed),
        function (aspect) {
          return sizesAttr(opts.layout, opts.width, aspect);
        },
        ph,
        'fmw-img',
      ),
    );
    paintPlaceholder(node.tagName === 'IMG' ? node : node.querySelector('img'), ph);
    return node;
  }

  /** Markup node: [tag, attributes, children]; a string child is text, never HTML (R-EMB-5). */
  function h(tag, attrs, kids) {
    return [tag, attrs || {}, kids || []];
  }

  function toDom(n) {
    if (typeof n === 'string') return document.createTextNode(n);
    var e = document.createElement(n[0]);
    var a = n[1];
    for (var k in a) {
      var v = a[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === 'style') for (var p in v) e.style.setProperty(p, v[p]);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (var i = 0; i < n[2].length; i++) if (n[2][i]) e.appendChild(toDom(n[2][i]));
    return e;
  }

  /** `sizes` follows the feed grid's width. */
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

  /**
   * The stylesheet: none when the page links feedmirror-widget.css (or has our <style>, from a
   * fragment), which a policy of `style-src 'self'` needs; else a <style>, with the nonce of this
   * script's tag when it has one (`style-src 'nonce-…'`).
   */
  function injectStyle() {
    if (document.getElementById(STYLE_ID) || document.querySelector('link[href*="feedmirror-widget.css"]')) return;
    var style = document.createElement('style');
    style.id = STYLE_ID;
    if (SCRIPT_NONCE) style.nonce = SCRIPT_NONCE;
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
    nodes = document.querySelectorAll('[data-feedmirror-widget]');
    for (i = 0; i < nodes.length; i++) jobs.push(mountWidget(nodes[i]));
    return Promise.all(jobs);
  }

  /* Widgets: <div data-feedmirror-widget="ID">, configured on the dashboard. */

  var LAYOUTS = ['grid', 'list', 'carousel', 'masonry'];
  var MONTHS = 'Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec'.split(' ');
  var BOX_SIZES = '(max-width: 808px) 94vw, 760px';
  // Documents sit at ../widgets/ from the script.
  var SCRIPT_SRC = typeof document !== 'undefined' && document.currentScript ? document.currentScript.src : '';
  var SCRIPT_NONCE = typeof document !== 'undefined' && document.currentScript ? document.currentScript.nonce : '';
  var counted = {};

  /** The same on the server and in every browser (English, UTC). */
  function shortDate(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? '' : MONTHS[d.getUTCMonth()] + ' ' + d.getUTCDate() + ', ' + d.getUTCFullYear();
  }

  /** R-EMB-1: caption without hashtags, first sentence, ~120 characters. */
  function captionAlt(text) {
    var t = String(text || '')
      .replace(/(^|\s)#[^\s#]+/g, ' ')
      .replace(/\s+/g, ' ')
      .trim();
    var m = /^.+?[.!?](?=\s|$)/.exec(t);
    if (m) t = m[0];
    if (t.length > ALT_MAX)
      t =
        t
          .slice(0, ALT_MAX)
          .replace(/\s+\S*$/, '')
          .replace(/[\s,;:]+$/, '') + '\u2026';
    return t;
  }

  function widgetAlt(post) {
    var m = post.media && post.media[0];
    if (m && typeof m.alt === 'string' && m.alt.trim()) return m.alt.trim();
    var d = shortDate(post.publishedAt);
    return captionAlt(post.text) || 'Post by @' + (post.username || 'unknown') + (d ? ' on ' + d : '');
  }

  /** R-SCH-10: format and type serve badges. */
  function badgeOf(post) {
    if (post.format === 'reel') return 'Reel';
    if (post.type === 'carousel') return 'Carousel';
    return post.type === 'video' ? 'Video' : '';
  }

  function layoutOf(doc) {
    return LAYOUTS.indexOf(doc.layout) >= 0 ? doc.layout : 'grid';
  }

  function limitOf(o) {
    var n = Math.floor(Number(o.limit));
    return n >= 1 ? Math.min(n, 200) : DEFAULT_LIMIT;
  }

  function keyOf(p) {
    return p.accountId + '/' + p.id;
  }

  function liKey(li) {
    return li.getAttribute('data-account-id') + '/' + li.getAttribute('data-post-id');
  }

  /** `sizes` by viewport, until resize() knows the width. */
  function mediaSizes(o, layout, aspect) {
    if (layout === 'list') return LIST_WIDTH + 'px';
    var c = o.columns || {};
    var f = layout === 'masonry' ? 1 : Math.max(1, aspect);
    var vw = function (n) {
      return Math.ceil((100 * f) / (n > 0 ? n : 1)) + 'vw';
    };
    return (
      '(max-width: 599px) ' +
      vw(c.phone || 2) +
      ', (max-width: 1023px) ' +
      vw(c.tablet || 3) +
      ', ' +
      vw(c.desktop || 4)
    );
  }

  function link(href, cls, kids, label) {
    return h('a', { class: cls, href: href, target: '_blank', rel: 'noopener noreferrer', 'aria-label': label }, kids);
  }

  function tileTree(post, doc) {
    var o = doc.options || {};
    var layout = layoutOf(doc);
    var kind = cardKind(post);
    var href = kind === 'link' ? safeUrl(post.link.url) : safeUrl(post.url);
    var kids = [];
    if (kind === 'visual')
      kids.push(
        imgTree(
          post.thumbnailUrl,
          post.thumbnailSizes,
          imageSize(post, []),
          widgetAlt(post),
          function (a) {
            return mediaSizes(o, layout, a);
          },
          placeholderOf(post.thumbnailPlaceholder),
          'fmw-img',
        ),
      );
    var body = [];
    var text = kind === 'link' ? post.link.title || post.text : post.text;
    if (text && (kind !== 'visual' || o.captions !== 'hide')) body.push(h('p', { class: 'fmw-text' }, [String(text)]));
    var d = o.date !== false && shortDate(post.publishedAt);
    if (d) body.push(h('time', { class: 'fmw-date', datetime: new Date(post.publishedAt).toISOString() }, [d]));
    if (body.length) kids.push(h('div', { class: 'fmw-body' }, body));
    var badge = o.badges !== false && badgeOf(post);
    return h(
      'li',
      {
        class: 'fmw-item fmw-' + (kind === 'visual' ? 'visual' : 'card'),
        'data-post-id': post.id,
        'data-account-id': post.accountId,
      },
      [
        href ? link(href, 'fmw-link', kids) : h('div', { class: 'fmw-link' }, kids),
        badge && h('span', { class: 'fmw-badge' }, [badge]),
      ],
    );
  }

  /** The root's custom properties: columns, radius and gap from the dashboard. */
  function rootStyle(o) {
    var c = o.columns || {};
    var num = function (n, d) {
      return n >= 0 ? n : d;
    };
    return {
      '--fmw-cp': String(num(c.phone, 2)),
      '--fmw-ct': String(num(c.tablet, 3)),
      '--fmw-cd': String(num(c.desktop, 4)),
      '--fmw-r': num(o.radius, 8) + 'px',
      '--fmw-g': num(o.gap, 8) + 'px',
    };
  }

  /** The widget's markup: the server's fragment and the script's rendering alike. */
  function widgetTree(doc) {
    var o = doc.options || {};
    var layout = layoutOf(doc);
    var accounts = Array.isArray(doc.accounts) ? doc.accounts : [];
    var kids = [];
    if (doc.demo === true) kids.push(h('p', { class: 'fmw-demo' }, ['Demo feed']));
    if (o.header !== false && accounts.length)
      kids.push(
        h(
          'div',
          { class: 'fmw-head' },
          accounts.map(function (a) {
            var url = safeUrl(a.profileUrl);
            var at = '@' + a.username;
            return h('div', { class: 'fmw-acct' }, [
              safeUrl(a.avatarUrl) &&
                h('img', { class: 'fmw-avatar', src: a.avatarUrl, alt: '', width: 40, height: 40 }),
              url ? link(url, 'fmw-user', [at]) : h('span', { class: 'fmw-user' }, [at]),
              url && link(url, 'fmw-follow', ['Follow'], 'Follow ' + at),
            ]);
          }),
        ),
      );
    var limit = limitOf(o);
    var list = h(
      'ul',
      { class: 'fmw-list' },
      doc.posts.slice(0, limit).map(function (p) {
        return tileTree(p, doc);
      }),
    );
    kids.push(layout === 'carousel' ? h('div', { class: 'fmw-rail' }, [list]) : list);
    // Without script a link to the profile; enhance() swaps in "Load more" (same box).
    var more = accounts[0] && safeUrl(accounts[0].profileUrl);
    if (layout !== 'carousel' && doc.posts.length > limit && more) kids.push(link(more, 'fmw-more', ['More posts']));
    return h(
      'div',
      {
        class:
          'fmw fmw-w fmw--' +
          layout +
          ' fmw--' +
          (o.theme === 'light' || o.theme === 'dark' ? o.theme : 'auto') +
          ' fmw-cap-' +
          (o.captions === 'show' || o.captions === 'hide' ? o.captions : 'hover'),
        'data-fmw-widget': doc.id,
        'data-stale': doc.staleSince ? doc.staleSince : null,
        style: rootStyle(o),
      },
      kids,
    );
  }

  function isWidgetDoc(d) {
    return !!d && typeof d === 'object' && d.version === 1 && typeof d.id === 'string' && Array.isArray(d.posts);
  }

  function smooth() {
    return root.matchMedia && root.matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth';
  }

  function resize(w) {
    var width = w.list.clientWidth;
    if (!width) return;
    var cs = getComputedStyle(w.wrap);
    var cols = parseInt(cs.getPropertyValue('--_c'), 10) || 1;
    var gap = parseFloat(cs.getPropertyValue('--_g')) || 0;
    var col = (width - gap * (cols - 1)) / cols;
    var nodes = w.list.querySelectorAll('img[sizes], source[sizes]');
    for (var i = 0; i < nodes.length; i++) {
      var img = nodes[i].tagName === 'IMG' ? nodes[i] : nodes[i].parentNode.querySelector('img');
      var aspect = Number(img && img.getAttribute('data-fmw-aspect')) || 1;
      var px = w.layout === 'list' ? LIST_WIDTH : Math.ceil(w.layout === 'masonry' ? col : col * Math.max(1, aspect));
      nodes[i].setAttribute('sizes', px + 'px');
    }
  }

  /**
   * Masonry: each tile spans its own height plus the gap in rows of 1px, so the grid puts it under
   * the shortest column while the tiles still read left to right, newest first. Boxes are sized
   * before their images arrive, so the heights are known at once. Only what this script rendered
   * (before its first paint): a server fragment already on the page stays in its rows (R-EMB-3).
   */
  function pack(w) {
    if (w.layout !== 'masonry' || !w.fresh) return;
    var gap = parseFloat(getComputedStyle(w.wrap).getPropertyValue('--_g')) || 0;
    var lis = w.list.children;
    for (var i = 0; i < lis.length; i++) {
      var box = lis[i].firstElementChild;
      var px = box ? box.getBoundingClientRect().height : 0;
      lis[i].style.gridRowEnd = 'span ' + Math.max(1, Math.ceil(px + gap));
    }
    w.list.classList.add('fmw-packed');
  }

  /** The carousel's arrows: Previous off at the first tile, Next at the last (R-EMB-3 keeps their boxes). */
  function arrows(w) {
    var l = w.list;
    var end = l.scrollWidth - l.clientWidth;
    var prev = w.wrap.querySelector('.fmw-arr.fmw-prev');
    var next = w.wrap.querySelector('.fmw-arr.fmw-next');
    if (prev) prev.setAttribute('aria-disabled', String(l.scrollLeft <= 1));
    if (next) next.setAttribute('aria-disabled', String(l.scrollLeft >= end - 1));
  }

  /** The page's own background behind the widget (theme auto's lightbox), else white. */
  function pageBackground(node) {
    for (; node && node.nodeType === 1; node = node.parentNode) {
      var bg = getComputedStyle(node).backgroundColor;
      if (bg && !/^(transparent|rgba\(.*,\s*0\))$/.test(bg)) return bg;
    }
    return '#fff';
  }

  function paintTiles(w, lis) {
    for (var i = 0; i < lis.length; i++) {
      var img = lis[i].querySelector('img.fmw-img');
      var post = w.byKey[liKey(lis[i])];
      if (!img) continue;
      if (img.complete) img.style.backgroundColor = '';
      else if (post) paintPlaceholder(img, placeholderOf(post.thumbnailPlaceholder));
    }
  }

  function loadMore(w, btn) {
    var have = {};
    var lis = w.list.children;
    for (var i = 0; i < lis.length; i++) have[liKey(lis[i])] = 1;
    var rest = w.doc.posts.filter(function (p) {
      return !have[keyOf(p)];
    });
    var added = rest.slice(0, limitOf(w.doc.options || {})).map(function (p) {
      return w.list.appendChild(toDom(tileTree(p, w.doc)));
    });
    paintTiles(w, added);
    resize(w);
    pack(w);
    if (w.ro && w.layout === 'masonry' && w.fresh)
      added.forEach(function (li) {
        w.ro.observe(li.firstElementChild);
      });
    if (rest.length <= added.length) btn.parentNode.removeChild(btn);
    if (added[0]) added[0].querySelector('.fmw-link').focus();
  }

  function slidesOf(post) {
    var m =
      post.type === 'carousel' && Array.isArray(post.media)
        ? post.media.filter(function (x) {
            return x && safeUrl(x.url);
          })
        : [];
    return m.length ? m : [null];
  }

  /** R-EMB-2: only a copy on the document's host plays (never the platform's CDN). */
  function playable(w, m) {
    try {
      return !!m && /^video\//.test(m.mime) && new URL(m.url).host === w.host ? m.url : null;
    } catch (e) {
      return null;
    }
  }

  function stageTree(w, post, slide, i) {
    var video = slide
      ? /^video\//.test(slide.mime)
        ? slide
        : null
      : post.type === 'video'
        ? (post.media || []).filter(function (m) {
            return m && /^video\//.test(m.mime);
          })[0] || {}
        : null;
    var cover = slide && !video ? slide.url : !slide || i === 0 ? post.thumbnailUrl : null;
    var list = slide && !video ? slide.sizes : post.thumbnailSizes;
    var size = slide && !video ? (positive(slide.width) && positive(slide.height) ? slide : null) : imageSize(post, []);
    var img =
      safeUrl(cover) &&
      imgTree(
        cover,
        list,
        size,
        widgetAlt(post),
        function () {
          return BOX_SIZES;
        },
        null,
        'fmw-big',
        true,
      );
    if (!video) return img;
    var src = playable(w, video);
    if (src)
      return h('video', {
        src: src,
        poster: safeUrl(post.thumbnailUrl),
        controls: true,
        playsinline: true,
        preload: 'none',
        width: size && size.width,
        height: size && size.height,
      });
    return link(safeUrl(post.url), '', [
      img,
      h('span', { class: 'fmw-play', 'aria-hidden': 'true' }, ['\u25b6']),
      h('span', { class: 'fmw-sr' }, ['Play on the original post']),
    ]);
  }

  function drawBox(w) {
    var lis = w.list.children;
    var li = lis[w.at];
    var post = w.byKey[liKey(li)];
    var slides = slidesOf(post);
    var d = w.box;
    var at = '@' + post.username;
    var acct = (w.doc.accounts || []).filter(function (a) {
      return a.id === post.accountId;
    })[0];
    d.setAttribute('aria-label', 'Post by ' + at);
    var stage = d.querySelector('.fmw-stage');
    stage.textContent = '';
    var visual = cardKind(post) === 'visual' && stageTree(w, post, slides[w.slide], w.slide);
    if (visual) stage.appendChild(toDom(visual));
    stage.hidden = !visual;
    d.querySelector('.fmw-count').textContent = slides.length > 1 ? w.slide + 1 + ' / ' + slides.length : '';
    d.querySelector('.fmw-prev').setAttribute('aria-disabled', String(!w.at && !w.slide));
    d.querySelector('.fmw-next').setAttribute(
      'aria-disabled',
      String(w.at >= lis.length - 1 && w.slide >= slides.length - 1),
    );
    var info = d.querySelector('.fmw-info');
    info.textContent = '';
    var profile = acct && safeUrl(acct.profileUrl);
    info.appendChild(
      toDom(
        h('div', {}, [
          h('p', {}, [
            profile ? link(profile, '', [at]) : at,
            ' \u00b7 ',
            h('time', { datetime: new Date(post.publishedAt).toISOString() }, [shortDate(post.publishedAt)]),
          ]),
          post.text && h('p', { class: 'fmw-full' }, [String(post.text)]),
          safeUrl(post.url) && h('p', {}, [link(post.url, '', ['View the original post'])]),
        ]),
      ),
    );
  }

  function step(w, dir) {
    var lis = w.list.children;
    var n = slidesOf(w.byKey[liKey(lis[w.at])]).length;
    if (w.slide + dir >= 0 && w.slide + dir < n) w.slide += dir;
    else if (w.at + dir >= 0 && w.at + dir < lis.length && w.byKey[liKey(lis[w.at + dir])]) {
      w.at += dir;
      w.slide = 0;
    } else return;
    drawBox(w);
    // The redrawn part may have held the focus: keep it in the dialog.
    if (!w.box.contains(document.activeElement)) w.box.querySelector(dir > 0 ? '.fmw-next' : '.fmw-prev').focus();
  }

  function openBox(w, li) {
    var d = w.box;
    if (!d) {
      d = w.box = toDom(
        h('dialog', { class: 'fmw-box' }, [
          h('button', { class: 'fmw-x', type: 'button', 'aria-label': 'Close' }, ['\u00d7']),
          h('div', { class: 'fmw-stage' }),
          h('div', { class: 'fmw-nav' }, [
            h('button', { class: 'fmw-prev', type: 'button', 'aria-label': 'Previous' }, ['\u2039']),
            h('span', { class: 'fmw-count' }),
            h('button', { class: 'fmw-next', type: 'button', 'aria-label': 'Next' }, ['\u203a']),
          ]),
          h('div', { class: 'fmw-info' }),
        ]),
      );
      w.wrap.appendChild(d);
      d.addEventListener('click', function (e) {
        var t = e.target;
        if (t === d || t.closest('.fmw-x')) d.close();
        else if (t.closest('.fmw-prev')) step(w, -1);
        else if (t.closest('.fmw-next')) step(w, 1);
      });
      d.addEventListener('keydown', function (e) {
        if (e.target.tagName === 'VIDEO') return;
        var dir = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
        if (dir) {
          e.preventDefault();
          step(w, dir);
        }
      });
      // Focus goes to the tile of the post shown last, after the browser's own restoring.
      d.addEventListener('close', function () {
        var back = function () {
          var tile = w.list.children[w.at];
          var a = tile && tile.querySelector('.fmw-link');
          if (a) a.focus();
        };
        back();
        setTimeout(back, 0);
      });
    }
    w.at = Array.prototype.indexOf.call(w.list.children, li);
    w.slide = 0;
    if (w.wrap.classList.contains('fmw--auto'))
      w.wrap.style.setProperty('--fmw-pbg', pageBackground(w.wrap.parentNode));
    drawBox(w);
    if (!d.open) d.showModal();
  }

  /** R-EMB-3: behaviour for the markup, rendered here or by the server; no box changes size. */
  function enhance(wrap, doc, url, fresh) {
    var w = {
      fresh: fresh,
      doc: doc,
      wrap: wrap,
      layout: layoutOf(doc),
      list: wrap.querySelector('.fmw-list'),
      byKey: {},
      host: new URL(url).host,
    };
    doc.posts.forEach(function (p) {
      w.byKey[keyOf(p)] = p;
    });
    // Through the CSSOM, which a policy without 'unsafe-inline' allows (a fragment's style
    // attribute it refuses).
    var st = rootStyle(doc.options || {});
    for (var k in st) wrap.style.setProperty(k, st[k]);
    paintTiles(w, w.list.children);
    var more = wrap.querySelector('.fmw-more');
    if (more) {
      var btn = toDom(h('button', { class: 'fmw-more', type: 'button' }, ['Load more']));
      more.parentNode.replaceChild(btn, more);
      btn.addEventListener('click', function () {
        loadMore(w, btn);
      });
    }
    if (w.layout === 'carousel') {
      [-1, 1].forEach(function (dir) {
        var b = toDom(
          h(
            'button',
            {
              class: 'fmw-arr fmw-' + (dir < 0 ? 'prev' : 'next'),
              type: 'button',
              'aria-label': dir < 0 ? 'Previous posts' : 'Next posts',
            },
            [dir < 0 ? '\u2039' : '\u203a'],
          ),
        );
        b.addEventListener('click', function () {
          if (b.getAttribute('aria-disabled') !== 'true')
            w.list.scrollBy({ left: dir * w.list.clientWidth, behavior: smooth() });
        });
        w.list.parentNode.appendChild(b);
      });
      w.list.addEventListener('scroll', function () {
        arrows(w);
      });
      arrows(w);
      w.list.addEventListener('keydown', function (e) {
        var dir = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
        var li = dir && e.target.closest('.fmw-item');
        var next = li && (dir > 0 ? li.nextElementSibling : li.previousElementSibling);
        if (next) {
          e.preventDefault();
          next.querySelector('.fmw-link').focus();
        }
      });
    }
    w.list.addEventListener('click', function (e) {
      var li = e.target.closest('.fmw-item');
      var post = li && w.byKey[liKey(li)];
      if (
        !post ||
        cardKind(post) === 'link' ||
        e.button ||
        e.metaKey ||
        e.ctrlKey ||
        e.shiftKey ||
        e.altKey ||
        typeof HTMLDialogElement !== 'function'
      )
        return;
      e.preventDefault();
      openBox(w, li);
    });
    resize(w);
    pack(w);
    if (typeof root.ResizeObserver === 'function') {
      var ro = new root.ResizeObserver(function () {
        resize(w);
        pack(w);
        if (w.layout === 'carousel') arrows(w);
      });
      ro.observe(w.list);
      // A tile's height can change after the first layout (a web font, a caption's lines).
      if (w.layout === 'masonry' && fresh)
        for (var i = 0; i < w.list.children.length; i++) ro.observe(w.list.children[i].firstElementChild);
      w.ro = ro;
    }
    return w;
  }

  /** R-EMB-4: one view per widget per page load: no cookies, no referrer. */
  function countView(doc) {
    var url = safeUrl(doc.viewsUrl);
    if (!url || counted[doc.id]) return;
    counted[doc.id] = 1;
    try {
      fetch(url, {
        method: 'POST',
        mode: 'no-cors',
        credentials: 'omit',
        keepalive: true,
        referrerPolicy: 'no-referrer',
      }).catch(function () {});
    } catch (e) {
      /* views are best effort */
    }
  }

  function docUrl(c) {
    var src = c.getAttribute('data-src');
    var id = c.getAttribute('data-feedmirror-widget');
    if (!src && !/^[\w-]+$/.test(id || '')) return null;
    var s = SCRIPT_SRC || (document.querySelector('script[src*="feedmirror-widget"]') || {}).src || location.href;
    return new URL(src || '../widgets/' + id + '.json', src ? location.href : s).href;
  }

  function mountWidget(c) {
    if (!c || c.getAttribute('data-feedmirror-state')) return Promise.resolve();
    var url = docUrl(c);
    c.setAttribute('data-feedmirror-state', 'loading');
    injectStyle();
    // Revalidated on every page load (a 304 while unchanged, R-EMB-6): a layout changed on the
    // dashboard shows on the visitor's next load, not once the document's max-age has run out.
    return fetch(url, { credentials: 'omit', cache: 'no-cache', headers: { Accept: 'application/json' } })
      .then(function (res) {
        if (!res.ok) throw new Error('widget document answered HTTP ' + res.status);
        return res.json();
      })
      .then(function (doc) {
        if (!isWidgetDoc(doc)) throw new Error('not a widget document');
        var wrap = c.querySelector('.fmw-w');
        var fresh = !wrap || wrap.getAttribute('data-fmw-widget') !== doc.id;
        if (fresh) {
          c.textContent = '';
          wrap = c.appendChild(toDom(widgetTree(doc)));
        }
        enhance(wrap, doc, url, fresh);
        countView(doc);
        c.setAttribute('data-feedmirror-state', 'ready');
      })
      .catch(function (err) {
        // A fragment stays: the last good posts rather than nothing.
        if (!c.querySelector('.fmw-w')) showError(c);
        c.setAttribute('data-feedmirror-state', 'error');
        if (root.console) root.console.warn('feedmirror widget: ' + (err && err.message ? err.message : err));
      });
  }

  root.FeedMirrorWidget = {
    mount: mount,
    mountWidget: mountWidget,
    mountAll: mountAll,
    // For src/embed/markup.ts (widgets/<id>.html).
    css: CSS,
    widgetTree: widgetTree,
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
      captionAlt: captionAlt,
      widgetAlt: widgetAlt,
      badgeOf: badgeOf,
      shortDate: shortDate,
      mediaSizes: mediaSizes,
    },
  };

  if (typeof document !== 'undefined') {
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', mountAll);
    else mountAll();
  }
})(typeof window !== 'undefined' ? window : globalThis);
