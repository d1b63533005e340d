/** `base` + key with exactly one `/` between them. Keys are validated, so no encoding is needed. */
export function joinPublicUrl(base: string, key: string): string {
  return `${base.replace(/\/+$/, '')}/${key}`;
}
