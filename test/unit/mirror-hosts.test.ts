import { describe, expect, it } from 'vitest';
import { isAllowedHost } from '../../src/mirror/download.ts';

describe('MEDIA_ALLOWED_HOSTS matching', () => {
  const allowed = ['.cdninstagram.com', 'images.example.org', '127.0.0.1:8080'];
  it.each([
    ['https://scontent-ams2-1.cdninstagram.com/v/t51/x.jpg', true],
    ['https://a.b.cdninstagram.com/x.jpg', true],
    ['https://cdninstagram.com/x.jpg', false], // '.suffix' means subdomains only
    ['https://evilcdninstagram.com/x.jpg', false],
    ['https://cdninstagram.com.evil.net/x.jpg', false],
    ['https://images.example.org/x.jpg', true],
    ['https://images.example.org:8443/x.jpg', true], // 'host' allows any port
    ['https://sub.images.example.org/x.jpg', false],
    ['http://127.0.0.1:8080/x.jpg', true],
    ['http://127.0.0.1:8081/x.jpg', false], // 'host:port' pins the port
    ['http://127.0.0.1/x.jpg', false],
    ['http://169.254.169.254/latest/meta-data', false],
  ])('%s => %s', (url, ok) => {
    expect(isAllowedHost(new URL(url), allowed)).toBe(ok);
  });
});
