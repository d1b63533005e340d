/**
 * Every wire identifier of the platform in one place. In the spec these carry the
 * word "social"; on the wire they carry the platform's own short brand word. Hosts are defaults
 * only: each is overridable by configuration (GRAPH_URL, AUTHORIZE_URL, OAUTH_TOKEN_URL).
 */
export const SOURCE = 'instagram'; // R-CNV-1: schema v1 `source`, lowercase platform name
export const GRANT_EXCHANGE = 'ig_exchange_token'; // R-TOK-1
export const GRANT_REFRESH = 'ig_refresh_token'; // R-TOK-2
export const GRANT_AUTHORIZATION_CODE = 'authorization_code';
export const SCOPE = 'instagram_business_basic'; // R-TOK-12: the current scope
export const DEPRECATED_SCOPE = 'business_basic'; // R-TOK-12: never used in authorize URLs
export const DEFAULT_GRAPH_URL = 'https://graph.instagram.com';
export const DEFAULT_AUTHORIZE_URL = 'https://www.instagram.com/oauth/authorize';
export const DEFAULT_OAUTH_TOKEN_URL = 'https://api.instagram.com/oauth/access_token';
export const DEFAULT_API_VERSION = 'v25.0'; // R-MED-1
/** Token endpoints carry no version segment (R-MED-1). */
export const EXCHANGE_PATH = '/access_token';
export const REFRESH_PATH = '/refresh_access_token';
/** The platform's CDN domains, the default of MEDIA_ALLOWED_HOSTS. */
export const DEFAULT_MEDIA_HOSTS = ['.cdninstagram.com', '.fbcdn.net'];
/** Professional account types (R-TOK-13); anything else is a personal account. */
export const PROFESSIONAL_ACCOUNT_TYPES = ['BUSINESS', 'MEDIA_CREATOR', 'CREATOR'];
/** A profile's public page is PROFILE_URL_BASE + username + '/' (schema v1 Origin.url). */
export const PROFILE_URL_BASE = 'https://www.instagram.com/';

/**
 * The platform API versions feedmirror knows, oldest first, with the dates the spec gives
 * (R-MED-1, R-MED-13). availableUntil is the last day the version answers; null while the
 * platform has not announced it. GRAPH_API_VERSION must name one of these.
 */
export const API_VERSIONS: ReadonlyArray<{ version: string; releasedOn: string; availableUntil: string | null }> = [
  { version: 'v25.0', releasedOn: '2026-02-18', availableUntil: '2028-07-29' },
  { version: 'v26.0', releasedOn: '2026-07-29', availableUntil: null },
];
