/**
 * The look an operator gives the emails and the owner pages (BRAND_NAME, BRAND_LOGO_URL,
 * BRAND_SUPPORT_EMAIL, BRAND_ACCENT_COLOR). The settings are validated at start-up; this module
 * checks again, because a brand can also come from code: anything unusable falls back to the
 * default instead of reaching an email or a page.
 */
export interface Brand {
  /** Shown in the header, the subject of the emails and the page titles. */
  name: string;
  /** https:// only (a logo over http would be blocked or flagged by mail clients and browsers). */
  logoUrl?: string | undefined;
  supportEmail?: string | undefined;
  /** #rrggbb: the button and the header's rule. */
  accentColor?: string | undefined;
}

/** A brand with every field checked and the button's text colour derived from the accent. */
export interface ResolvedBrand {
  name: string;
  logoUrl?: string;
  supportEmail?: string;
  accentColor: string;
  /** #ffffff or #111827, whichever reads better on accentColor. */
  accentText: string;
}

export const DEFAULT_BRAND_NAME = 'feedmirror';
export const DEFAULT_ACCENT = '#2563eb';
export const ACCENT_COLOR = /^#[0-9a-fA-F]{6}$/;
export const SUPPORT_EMAIL = /^[^\s@<>(),;:"]+@[A-Za-z0-9.-]+$/;

export function isHttpsUrl(s: string): boolean {
  try {
    return new URL(s).protocol === 'https:';
  } catch {
    return false;
  }
}

export function brandFromSettings(s: {
  BRAND_NAME?: string | undefined;
  BRAND_LOGO_URL?: string | undefined;
  BRAND_SUPPORT_EMAIL?: string | undefined;
  BRAND_ACCENT_COLOR?: string | undefined;
}): Brand {
  return {
    name: s.BRAND_NAME ?? DEFAULT_BRAND_NAME,
    logoUrl: s.BRAND_LOGO_URL,
    supportEmail: s.BRAND_SUPPORT_EMAIL,
    accentColor: s.BRAND_ACCENT_COLOR,
  };
}

export function resolveBrand(b: Brand | undefined): ResolvedBrand {
  const name = b?.name.trim() || DEFAULT_BRAND_NAME;
  const accentColor = b?.accentColor && ACCENT_COLOR.test(b.accentColor) ? b.accentColor.toLowerCase() : DEFAULT_ACCENT;
  return {
    name,
    ...(b?.logoUrl && isHttpsUrl(b.logoUrl) ? { logoUrl: b.logoUrl } : {}),
    ...(b?.supportEmail && SUPPORT_EMAIL.test(b.supportEmail) ? { supportEmail: b.supportEmail } : {}),
    accentColor,
    accentText: readableTextOn(accentColor),
  };
}

/** WCAG relative luminance: white text on dark accents, near-black on light ones. */
function readableTextOn(hex: string): string {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  const l = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  // Contrast with white (1.05 / (l + 0.05)) against contrast with #111827 (l ≈ 0.012).
  return 1.05 / (l + 0.05) >= (l + 0.05) / 0.062 ? '#ffffff' : '#111827';
}
