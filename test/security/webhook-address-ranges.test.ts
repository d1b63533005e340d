import { describe, expect, it } from 'vitest';
import { checkEndpointUrl, isPublicAddress, SPECIAL_RANGES, specialRangeOf } from '../../src/webhooks/address.ts';

/**
 * R-NET-1: a webhook never reaches an address of an IANA special-purpose range that is not
 * globally reachable. One case per range of the table (written out here, not derived from it):
 * the first, a middle and the last address of the range must be refused and named by it; the
 * addresses just outside stay allowed where they are public.
 */
const CASES: Array<{ cidr: string; inside: string[] }> = [
  { cidr: '0.0.0.0/8', inside: ['0.0.0.0', '0.1.2.3', '0.255.255.255'] },
  { cidr: '10.0.0.0/8', inside: ['10.0.0.0', '10.20.30.40', '10.255.255.255'] },
  { cidr: '100.64.0.0/10', inside: ['100.64.0.0', '100.100.1.1', '100.127.255.255'] },
  { cidr: '127.0.0.0/8', inside: ['127.0.0.1', '127.1.2.3', '127.255.255.255'] },
  { cidr: '169.254.0.0/16', inside: ['169.254.0.0', '169.254.169.254', '169.254.255.255'] },
  { cidr: '172.16.0.0/12', inside: ['172.16.0.0', '172.20.1.1', '172.31.255.255'] },
  { cidr: '192.0.0.0/24', inside: ['192.0.0.0', '192.0.0.8', '192.0.0.170', '192.0.0.255'] },
  { cidr: '192.0.2.0/24', inside: ['192.0.2.0', '192.0.2.1', '192.0.2.255'] },
  { cidr: '192.88.99.0/24', inside: ['192.88.99.0', '192.88.99.1', '192.88.99.255'] },
  { cidr: '192.168.0.0/16', inside: ['192.168.0.0', '192.168.1.1', '192.168.255.255'] },
  { cidr: '198.18.0.0/15', inside: ['198.18.0.0', '198.18.0.1', '198.19.255.255'] },
  { cidr: '198.51.100.0/24', inside: ['198.51.100.0', '198.51.100.7', '198.51.100.255'] },
  { cidr: '203.0.113.0/24', inside: ['203.0.113.0', '203.0.113.9', '203.0.113.255'] },
  { cidr: '224.0.0.0/4', inside: ['224.0.0.1', '232.1.1.1', '239.255.255.255'] },
  { cidr: '240.0.0.0/4', inside: ['240.0.0.0', '250.1.1.1', '255.255.255.254'] },
  { cidr: '255.255.255.255/32', inside: ['255.255.255.255'] },
  { cidr: '::/128', inside: ['::'] },
  { cidr: '::1/128', inside: ['::1'] },
  { cidr: '::ffff:0:0/96', inside: ['::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:8.8.8.8'] },
  { cidr: '::/96', inside: ['::7f00:1', '::a00:1', '::808:808', '::ffff:ffff'] },
  { cidr: '64:ff9b::/96', inside: ['64:ff9b::a00:1', '64:ff9b::7f00:1', '64:ff9b::c612:1'] },
  { cidr: '64:ff9b:1::/48', inside: ['64:ff9b:1::', '64:ff9b:1::a00:1', '64:ff9b:1:ffff:ffff:ffff:ffff:ffff'] },
  { cidr: '100::/64', inside: ['100::', '100::1', '100::ffff:ffff:ffff:ffff'] },
  { cidr: '100:0:0:1::/64', inside: ['100:0:0:1::', '100:0:0:1::1', '100:0:0:1:ffff:ffff:ffff:ffff'] },
  { cidr: '2001::/23', inside: ['2001::1', '2001:2::1', '2001:1::1', '2001:10::1', '2001:1ff:ffff::1'] },
  { cidr: '2001:db8::/32', inside: ['2001:db8::', '2001:db8::1', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'] },
  { cidr: '2002::/16', inside: ['2002::', '2002:a00:1::1', '2002:ffff::1'] },
  { cidr: '3fff::/20', inside: ['3fff::', '3fff::1', '3fff:fff:ffff::1'] },
  { cidr: '5f00::/16', inside: ['5f00::', '5f00::1', '5f00:ffff::1'] },
  { cidr: 'fc00::/7', inside: ['fc00::', 'fd12:3456::1', 'fdff:ffff::1'] },
  { cidr: 'fe80::/10', inside: ['fe80::', 'fe80::1', 'febf:ffff::1'] },
  { cidr: 'fec0::/10', inside: ['fec0::', 'fec0::1', 'feff:ffff::1'] },
  { cidr: 'ff00::/8', inside: ['ff00::', 'ff02::1', 'ffff:ffff::1'] },
  { cidr: '::/3', inside: ['1::', '1fff:ffff::1'] },
  { cidr: '4000::/2', inside: ['4000::1', '7fff::1'] },
  { cidr: '8000::/1', inside: ['8000::1', 'c000::1', 'fb00::1'] },
];

/** Globally reachable: allowed (some right next to a refused range). */
const PUBLIC = [
  '1.1.1.1',
  '8.8.8.8',
  '93.184.216.34',
  '9.255.255.255', // just below 10.0.0.0/8
  '11.0.0.0', // just above it
  '100.63.255.255', // below CGNAT
  '100.128.0.0', // above it
  '172.15.255.255',
  '172.32.0.0',
  '192.0.1.255',
  '192.0.3.0',
  '192.31.196.1', // AS112, globally reachable
  '192.52.193.1', // AMT, globally reachable
  '198.17.255.255',
  '198.20.0.0',
  '223.255.255.255',
  '2606:2800:220:1:248:1893:25c8:1946',
  '2001:4860:4860::8888', // outside 2001::/23
  '2001:200::1', // the first address after 2001::/23
  '64:ff9b::808:808', // NAT64 of 8.8.8.8: reaches a public address
  '2620:4f:8000::1', // AS112 direct delegation, globally reachable
  '3ffe::1', // below 3fff::/20, inside 2000::/3
];

describe('R-NET-1 webhook address ranges', () => {
  it('every row of the table has its case here (a new row needs a test)', () => {
    expect(SPECIAL_RANGES.map((r) => r.cidr).sort()).toEqual(CASES.map((c) => c.cidr).sort());
  });

  for (const { cidr, inside } of CASES) {
    it(`refuses ${cidr}`, () => {
      for (const address of inside) {
        expect(isPublicAddress(address), address).toBe(false);
        expect(specialRangeOf(address)?.cidr, address).toBe(cidr);
        const literal = address.includes(':') ? `[${address}]` : address;
        expect(() => checkEndpointUrl(`https://${literal}/hook`, false), address).toThrow(
          /private or local address \(.+\); set WEBHOOK_ALLOW_PRIVATE=true/,
        );
        // The operator may still allow it.
        expect(() => checkEndpointUrl(`https://${literal}/hook`, true)).not.toThrow();
      }
    });
  }

  it('the four addresses that passed: benchmarking, IPv4-compatible, local-use NAT64, site-local', () => {
    for (const url of ['http://198.18.0.1/', 'http://[::7f00:1]/', 'http://[64:ff9b:1::a00:1]/', 'http://[fec0::1]/'])
      expect(() => checkEndpointUrl(url, false), url).toThrow(/private or local address/);
  });

  it('the refusal names the range; NAT64 names the address it embeds', () => {
    expect(() => checkEndpointUrl('http://198.18.0.1/', false)).toThrow(/198\.18\.0\.0\/15: benchmarking/);
    expect(specialRangeOf('64:ff9b::a00:1')?.name).toMatch(/embedding 10\.0\.0\.1, private use/);
  });

  it('other spellings of a refused address are refused too (the URL parser normalises them)', () => {
    for (const url of [
      'http://0xc6.0x12.0.1/',
      'http://3323068417/',
      'http://[::ffff:c612:1]/',
      'http://[0:0:0:0:0:0:7f00:1]/',
    ])
      expect(() => checkEndpointUrl(url, false), url).toThrow(/private or local address/);
  });

  it('globally reachable addresses pass', () => {
    for (const address of PUBLIC) {
      expect(specialRangeOf(address), address).toBeNull();
      const literal = address.includes(':') ? `[${address}]` : address;
      expect(checkEndpointUrl(`https://${literal}/hook`, false).protocol).toBe('https:');
    }
  });
});
