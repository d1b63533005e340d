/**
 * The page this script runs on: its global object (a bare VM context in tests, where there is no
 * window) and this script's own <script> tag, read while the script runs (document.currentScript
 * is null afterwards): widget documents sit at ../widgets/ from its address, and its nonce, when
 * the page gives one, goes on the <style> it adds (`style-src 'nonce-…'`).
 */
export const root = (typeof window !== 'undefined' ? window : globalThis) as Window & typeof globalThis;
const tag = typeof document !== 'undefined' ? (document.currentScript as HTMLScriptElement | null) : null;
export const SCRIPT_SRC = tag ? tag.src : '';
export const SCRIPT_NONCE = tag ? tag.nonce : '';
