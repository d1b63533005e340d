import { describe, expect, it } from 'vitest';
import { hasMp4Signature, Mp4Probe, parseMoov, readMp4Header } from '../../src/mirror/mp4.ts';
import { InvalidVideoError } from '../../src/mirror/errors.ts';
import { makeMp4 } from '../../src/simulator/mp4.ts';
import { parseRange } from '../../src/http/range.ts';

const box = (type: string, body: Buffer) => {
  const h = Buffer.alloc(8);
  h.writeUInt32BE(body.length + 8);
  h.write(type, 4, 'latin1');
  return Buffer.concat([h, body]);
};

/** The moov of a made file, and where it sits. */
function moovOf(file: Buffer): { at: number; size: number } {
  let at = 0;
  while (at < file.length) {
    const size = file.readUInt32BE(at);
    if (file.toString('latin1', at + 4, at + 8) === 'moov') return { at, size };
    at += size;
  }
  throw new Error('no moov');
}

describe('the MP4 header, read without ffmpeg (src/mirror/mp4.ts)', () => {
  it('reads duration and the display size (mvhd, the video track tkhd)', () => {
    expect(readMp4Header(makeMp4('a', { width: 1080, height: 1920, seconds: 3 }))).toEqual({
      width: 1080,
      height: 1920,
      durationSec: 3,
    });
    expect(readMp4Header(makeMp4('b', { width: 640, height: 480, seconds: 1.5, fps: 20 }))).toEqual({
      width: 640,
      height: 480,
      durationSec: 1.5,
    });
  });

  it('reads the header fed a byte at a time, and with moov after the media data', () => {
    const file = makeMp4('c', { width: 720, height: 1280, seconds: 2 });
    const probe = new Mp4Probe();
    for (let i = 0; i < file.length; i += 7) probe.push(file.subarray(i, i + 7));
    expect(probe.finish()).toEqual({ width: 720, height: 1280, durationSec: 2 });
    // The same boxes with moov moved to the end (a file without "fast start").
    const { at, size } = moovOf(file);
    const moved = Buffer.concat([file.subarray(0, at), file.subarray(at + size), file.subarray(at, at + size)]);
    expect(readMp4Header(moved)).toEqual({ width: 720, height: 1280, durationSec: 2 });
  });

  it('refuses what is not an MP4 from its first eight bytes: a JPEG, HTML, an empty file', () => {
    expect(hasMp4Signature(makeMp4('d', { width: 10, height: 10 }))).toBe(true);
    for (const bytes of [
      Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46]),
      Buffer.from('<!doctype html><title>x</title>'),
    ]) {
      const probe = new Mp4Probe();
      expect(() => probe.push(bytes)).toThrow(InvalidVideoError);
    }
    expect(() => new Mp4Probe().finish()).toThrow(/shorter than its first box/);
  });

  it('refuses a file cut short, one without moov, and one without a video track', () => {
    const file = makeMp4('e', { width: 100, height: 100 });
    expect(() => readMp4Header(file.subarray(0, file.length - 10))).toThrow(/cut short/);
    const ftyp = file.subarray(0, file.readUInt32BE(0));
    expect(() => readMp4Header(Buffer.concat([ftyp, box('free', Buffer.alloc(16))]))).toThrow(/no moov/);
    // An audio-only header: its handler is 'soun'.
    const { at, size } = moovOf(file);
    const moov = Buffer.from(file.subarray(at + 8, at + size));
    const i = moov.indexOf('vide', 0, 'latin1');
    moov.write('soun', i, 'latin1');
    expect(() => parseMoov(moov)).toThrow(/no video track/);
  });

  it('reads a 64-bit box size (size 1) and a box running to the end of the file (size 0)', () => {
    const file = makeMp4('f', { width: 320, height: 240, seconds: 1 });
    const big = Buffer.alloc(16);
    big.writeUInt32BE(1, 0);
    big.write('free', 4, 'latin1');
    big.writeBigUInt64BE(24n, 8);
    const tail = Buffer.alloc(8);
    tail.write('mdat', 4, 'latin1'); // size 0: to the end
    const out = Buffer.concat([file, big, Buffer.alloc(8), tail, Buffer.alloc(100)]);
    expect(readMp4Header(out)).toEqual({ width: 320, height: 240, durationSec: 1 });
  });
});

describe('HTTP Range (src/http/range.ts)', () => {
  it('answers single ranges as S3 does, the whole object otherwise, 416 past the end', () => {
    expect(parseRange(undefined, 100)).toEqual({ kind: 'whole' });
    expect(parseRange('bytes=0-0', 100)).toEqual({ kind: 'partial', start: 0, end: 0 });
    expect(parseRange('bytes=40-59', 100)).toEqual({ kind: 'partial', start: 40, end: 59 });
    expect(parseRange('bytes=99-', 100)).toEqual({ kind: 'partial', start: 99, end: 99 });
    expect(parseRange('bytes=90-500', 100)).toEqual({ kind: 'partial', start: 90, end: 99 });
    expect(parseRange('bytes=-1', 100)).toEqual({ kind: 'partial', start: 99, end: 99 });
    expect(parseRange('bytes=-500', 100)).toEqual({ kind: 'partial', start: 0, end: 99 });
    expect(parseRange('bytes=100-', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-0', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=0-1,5-6', 100)).toEqual({ kind: 'whole' });
    expect(parseRange('items=0-1', 100)).toEqual({ kind: 'whole' });
    expect(parseRange('bytes=5-2', 100)).toEqual({ kind: 'whole' });
  });
});
