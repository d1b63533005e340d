import { SCRIPT_NONCE } from './page.ts';

/**
 * The widget's stylesheet: injected as a <style> by the script, written into the static fragment
 * (src/embed/markup.ts), and published as its own file (widget/feedmirror-widget.css) for pages
 * whose Content-Security-Policy refuses inline styles. One text, so the three never differ.
 */
export const STYLE_ID = 'feedmirror-widget-style';
/** As in the CSS: list images are 120 px wide. */
export const LIST_WIDTH = 120;

// Scoped under .fmw: the host page's styles and ours stay apart.
export const CSS = [
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

/**
 * The stylesheet: none when the page links feedmirror-widget.css (or has our <style>, from a
 * fragment), which a policy of `style-src 'self'` needs; else a <style>, with the nonce of this
 * script's tag when it has one (`style-src 'nonce-…'`).
 */
export function injectStyle(): void {
  if (document.getElementById(STYLE_ID) || document.querySelector('link[href*="feedmirror-widget.css"]')) return;
  const style = document.createElement('style');
  style.id = STYLE_ID;
  if (SCRIPT_NONCE) style.nonce = SCRIPT_NONCE;
  style.textContent = CSS;
  (document.head || document.documentElement).appendChild(style);
}
