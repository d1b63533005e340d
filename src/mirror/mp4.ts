import { InvalidVideoError } from './errors.ts';

/**
 * What a mirrored video's feed entry says about it, read from the MP4's own header (ISO BMFF,
 * ISO/IEC 14496-12) without ffmpeg: the movie's running time (moov/mvhd, or the video track's
 * mdhd when the movie header leaves it at 0, as fragmented files do) and the video track's
 * presentation size (its tkhd width and height, 16.16 fixed point; the track whose handler is
 * 'vide'). Only the header boxes are parsed; the media data (mdat) is never looked at.
 *
 * The file arrives as a stream (a video is never held whole in memory): Mp4Probe walks the
 * top-level boxes as bytes go by, checks the signature on the first eight (an `ftyp` box first,
 * the MP4 family's mark: anything else is refused before more is read), skips every box but
 * `moov`, and keeps that one box (at most MAX_MOOV_BYTES) to parse once the stream ends, wherever
 * it sits (at the start of a "fast start" file, or after the media data).
 */
export interface VideoHeader {
  /** Seconds; absent when the header gives no duration. */
  durationSec?: number;
  width: number;
  height: number;
}

/** A moov of a few hours of video with many tracks is a few MB; past this the file is refused. */
export const MAX_MOOV_BYTES = 16 * 1024 * 1024;

/** Does this start like an MP4 file (an `ftyp` box first)? Needs 8 bytes. */
export function hasMp4Signature(head: Buffer): boolean {
  return head.length >= 8 && head.toString('latin1', 4, 8) === 'ftyp' && head.readUInt32BE(0) >= 8;
}

/** Walks a stream's top-level boxes, keeping moov. push() every chunk in order, then finish(). */
export class Mp4Probe {
  private offset = 0;
  /** Bytes of a box header being read (8, or 16 for a 64-bit size). */
  private header = Buffer.alloc(0);
  /** Bytes of the current box's body still to pass (Infinity: to the end of the file). */
  private remaining = 0;
  private capturing: Buffer[] | null = null;
  private captured = 0;
  private moov: Buffer | null = null;
  private signed = false;

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, chunk.length - at);
        if (this.capturing) {
          this.captured += take;
          if (this.captured > MAX_MOOV_BYTES)
            throw new InvalidVideoError(`the MP4 header (moov) is larger than ${MAX_MOOV_BYTES} bytes`);
          this.capturing.push(Buffer.from(chunk.subarray(at, at + take)));
        }
        this.remaining -= take;
        this.offset += take;
        at += take;
        if (this.remaining === 0) this.endBox();
        continue;
      }
      const need = this.headerLength() - this.header.length;
      const take = Math.min(need, chunk.length - at);
      this.header = Buffer.concat([this.header, chunk.subarray(at, at + take)]);
      this.offset += take;
      at += take;
      if (this.header.length === this.headerLength()) this.startBox();
    }
  }

  /** The header, once the whole file went through push(). */
  finish(): VideoHeader {
    if (this.capturing && this.remaining === Infinity) this.endBox(); // a moov running to the end of the file
    if (!this.signed) throw new InvalidVideoError('not an MP4 file: the file is shorter than its first box header');
    if (this.header.length > 0 || (this.remaining > 0 && this.remaining !== Infinity))
      throw new InvalidVideoError('the MP4 file ends inside a box: it was cut short');
    if (!this.moov) throw new InvalidVideoError('the MP4 file has no moov box (no header to play it by)');
    return parseMoov(this.moov);
  }

  private headerLength(): number {
    // size 1: a 64-bit size follows the type.
    return this.header.length >= 8 && this.header.readUInt32BE(0) === 1 ? 16 : 8;
  }

  private startBox(): void {
    const h = this.header;
    const type = h.toString('latin1', 4, 8);
    if (!this.signed) {
      if (!hasMp4Signature(h)) throw new InvalidVideoError('not an MP4 file: it does not start with an ftyp box');
      this.signed = true;
    }
    const size32 = h.readUInt32BE(0);
    const size = size32 === 1 ? Number(h.readBigUInt64BE(8)) : size32;
    const body = size === 0 ? Infinity : size - h.length;
    if (size !== 0 && body < 0) throw new InvalidVideoError(`the MP4 box ${JSON.stringify(type)} has a bad size`);
    this.header = Buffer.alloc(0);
    if (type === 'moov' && !this.moov) {
      this.capturing = [];
      this.captured = 0;
    }
    this.remaining = body;
    if (body === 0) this.endBox();
  }

  private endBox(): void {
    if (this.capturing) {
      this.moov = Buffer.concat(this.capturing);
      this.capturing = null;
    }
    this.remaining = 0;
  }
}

interface Box {
  type: string;
  body: Buffer;
}

/** The boxes of a container's body; a box that runs past its parent is refused. */
function children(buf: Buffer): Box[] {
  const out: Box[] = [];
  let at = 0;
  while (at + 8 <= buf.length) {
    let size = buf.readUInt32BE(at);
    const type = buf.toString('latin1', at + 4, at + 8);
    let head = 8;
    if (size === 1) {
      if (at + 16 > buf.length) break;
      size = Number(buf.readBigUInt64BE(at + 8));
      head = 16;
    } else if (size === 0) size = buf.length - at;
    if (size < head || at + size > buf.length)
      throw new InvalidVideoError(`the MP4 header box ${JSON.stringify(type)} runs past its parent`);
    out.push({ type, body: buf.subarray(at + head, at + size) });
    at += size;
  }
  return out;
}

const child = (boxes: Box[], type: string) => boxes.find((b) => b.type === type);

/** A full box's (version, then flags) time fields: [timescale, duration] of mvhd and mdhd. */
function timescaleAndDuration(body: Buffer): { timescale: number; duration: number } {
  if (body.length < 4) throw new InvalidVideoError('a truncated MP4 time header');
  const v1 = body[0] === 1;
  const need = v1 ? 4 + 8 + 8 + 4 + 8 : 4 + 4 + 4 + 4 + 4;
  if (body.length < need) throw new InvalidVideoError('a truncated MP4 time header');
  if (v1) return { timescale: body.readUInt32BE(20), duration: Number(body.readBigUInt64BE(24)) };
  return { timescale: body.readUInt32BE(12), duration: body.readUInt32BE(16) };
}

/** A duration that can be published (schema v1: positive), in milliseconds' precision. */
function seconds(t: { timescale: number; duration: number }): number | undefined {
  if (t.timescale <= 0 || t.duration <= 0 || t.duration === 0xffffffff) return undefined;
  return Math.round((t.duration / t.timescale) * 1000) / 1000;
}

/** tkhd's width and height (16.16 fixed point, after the matrix). */
function trackSize(tkhd: Buffer): { width: number; height: number } {
  const v1 = tkhd[0] === 1;
  // version+flags, times, track id, reserved, duration; reserved(8) layer volume etc (8); matrix (36)
  const at = 4 + (v1 ? 8 + 8 + 4 + 4 + 8 : 4 + 4 + 4 + 4 + 4) + 8 + 8 + 36;
  if (tkhd.length < at + 8) throw new InvalidVideoError('a truncated MP4 track header');
  return { width: Math.round(tkhd.readUInt32BE(at) / 65536), height: Math.round(tkhd.readUInt32BE(at + 4) / 65536) };
}

/** Parse a moov box's body (what follows its 8-byte header). */
export function parseMoov(moov: Buffer): VideoHeader {
  const boxes = children(moov);
  const mvhd = child(boxes, 'mvhd');
  if (!mvhd) throw new InvalidVideoError('the MP4 header has no movie header (mvhd)');
  let durationSec = seconds(timescaleAndDuration(mvhd.body));
  for (const trak of boxes.filter((b) => b.type === 'trak')) {
    const parts = children(trak.body);
    const mdia = child(parts, 'mdia');
    const tkhd = child(parts, 'tkhd');
    if (!mdia || !tkhd) continue;
    const media = children(mdia.body);
    const hdlr = child(media, 'hdlr');
    if (!hdlr || hdlr.body.length < 12 || hdlr.body.toString('latin1', 8, 12) !== 'vide') continue;
    const size = trackSize(tkhd.body);
    if (size.width <= 0 || size.height <= 0) continue;
    const mdhd = child(media, 'mdhd');
    if (durationSec === undefined && mdhd) durationSec = seconds(timescaleAndDuration(mdhd.body));
    return { ...size, ...(durationSec !== undefined ? { durationSec } : {}) };
  }
  throw new InvalidVideoError('the MP4 file has no video track with a size');
}

/** The header of a whole MP4 file in memory (a small file, a test). */
export function readMp4Header(file: Buffer): VideoHeader {
  const probe = new Mp4Probe();
  probe.push(file);
  return probe.finish();
}
