import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';

/**
 * Real, playable MP4 files for the simulator's videos and reels, made in code (no ffmpeg, nothing
 * committed, nothing licensed): H.264 Constrained Baseline in an ISO BMFF file that Chromium's and
 * Safari's decoders play. The encoder is the smallest one there is: the first frame is an IDR
 * picture whose macroblocks are all I_PCM (raw samples, ITU-T H.264 7.3.5: no transform, no
 * prediction, no entropy coding of residuals), every later frame a P picture whose macroblocks are
 * all skipped (one mb_skip_run: the picture repeats). So a file shows one still picture (a colour
 * field with bands, different per key) for its running time, which is what a test needs: a video
 * element that loads, decodes and whose currentTime advances.
 *
 * The coded picture is small (144 pixels wide, the display aspect kept, in whole macroblocks);
 * the track header says the display size the simulated post has (tkhd width/height), so players
 * scale it and the copy's measured size is the post's. The moov box comes first ("fast start").
 *
 * paddedMp4 makes the same file any size by a trailing `free` box streamed as zeros (ISO BMFF
 * readers skip `free`): the 100 MB videos of the memory test, never held in memory.
 */

class Bits {
  private bytes: number[] = [];
  private cur = 0;
  private n = 0;
  u(bits: number, value: number): this {
    for (let i = bits - 1; i >= 0; i--) {
      this.cur = (this.cur << 1) | ((value >>> i) & 1);
      if (++this.n === 8) this.flush();
    }
    return this;
  }
  ue(value: number): this {
    const v = value + 1;
    const len = Math.floor(Math.log2(v));
    this.u(len, 0);
    return this.u(len + 1, v);
  }
  se(value: number): this {
    return this.ue(value <= 0 ? -2 * value : 2 * value - 1);
  }
  align(): this {
    while (this.n !== 0) this.u(1, 0);
    return this;
  }
  byte(b: number): this {
    return this.u(8, b);
  }
  trailing(): Buffer {
    this.u(1, 1);
    this.align();
    return Buffer.from(this.bytes);
  }
  private flush() {
    this.bytes.push(this.cur & 0xff);
    this.cur = 0;
    this.n = 0;
  }
}

/** A NAL unit from its RBSP: header byte, then emulation prevention (00 00 0x => 00 00 03 0x for x <= 3). */
function nal(refIdc: number, type: number, rbsp: Buffer): Buffer {
  const out: number[] = [(refIdc << 5) | type];
  let zeros = 0;
  for (const b of rbsp) {
    if (zeros >= 2 && b <= 3) {
      out.push(3);
      zeros = 0;
    }
    out.push(b);
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return Buffer.from(out);
}

function sps(mbsWide: number, mbsHigh: number): Buffer {
  const b = new Bits()
    .byte(66) // profile_idc: Baseline
    .byte(0xc0) // constraint_set0 and 1: Constrained Baseline
    .byte(30) // level 3.0
    .ue(0) // seq_parameter_set_id
    .ue(0) // log2_max_frame_num_minus4: frame_num in 4 bits
    .ue(2) // pic_order_cnt_type 2: output order is decoding order
    .ue(1) // max_num_ref_frames
    .u(1, 0) // gaps_in_frame_num_value_allowed_flag
    .ue(mbsWide - 1)
    .ue(mbsHigh - 1)
    .u(1, 1) // frame_mbs_only_flag
    .u(1, 1) // direct_8x8_inference_flag
    .u(1, 0) // frame_cropping_flag
    .u(1, 0); // vui_parameters_present_flag
  return nal(3, 7, b.trailing());
}

function pps(): Buffer {
  const b = new Bits()
    .ue(0) // pic_parameter_set_id
    .ue(0) // seq_parameter_set_id
    .u(1, 0) // entropy_coding_mode_flag: CAVLC
    .u(1, 0) // bottom_field_pic_order_in_frame_present_flag
    .ue(0) // num_slice_groups_minus1
    .ue(0) // num_ref_idx_l0_default_active_minus1
    .ue(0) // num_ref_idx_l1_default_active_minus1
    .u(1, 0) // weighted_pred_flag
    .u(2, 0) // weighted_bipred_idc
    .se(0) // pic_init_qp_minus26
    .se(0) // pic_init_qs_minus26
    .se(0) // chroma_qp_index_offset
    .u(1, 1) // deblocking_filter_control_present_flag (to turn it off: nothing to smooth)
    .u(1, 0) // constrained_intra_pred_flag
    .u(1, 0); // redundant_pic_cnt_present_flag
  return nal(3, 8, b.trailing());
}

/** The IDR picture: every macroblock I_PCM, luma in horizontal bands over the key's colour. */
function idrSlice(mbsWide: number, mbsHigh: number, seed: Buffer): Buffer {
  const b = new Bits()
    .ue(0) // first_mb_in_slice
    .ue(7) // slice_type: I (all slices)
    .ue(0) // pic_parameter_set_id
    .u(4, 0) // frame_num
    .ue(0) // idr_pic_id
    .u(1, 0) // no_output_of_prior_pics_flag
    .u(1, 0) // long_term_reference_flag
    .se(0) // slice_qp_delta
    .ue(1); // disable_deblocking_filter_idc: off
  const cb = 64 + (seed[0]! % 128);
  const cr = 64 + (seed[1]! % 128);
  for (let my = 0; my < mbsHigh; my++) {
    for (let mx = 0; mx < mbsWide; mx++) {
      b.ue(25).align(); // mb_type I_PCM, pcm_alignment_zero_bits
      for (let y = 0; y < 16; y++) {
        const row = my * 16 + y;
        // Samples stay within 16..235 (video range): never 0, so no start-code emulation either.
        const luma = 40 + ((Math.floor(row / 24) * 37 + seed[2]!) % 176);
        for (let x = 0; x < 16; x++) b.byte(luma);
      }
      for (let i = 0; i < 64; i++) b.byte(cb);
      for (let i = 0; i < 64; i++) b.byte(cr);
    }
  }
  return nal(3, 5, b.trailing());
}

/** A P picture repeating the previous one: all macroblocks skipped. */
function skipSlice(frameNum: number, mbs: number): Buffer {
  const b = new Bits()
    .ue(0) // first_mb_in_slice
    .ue(5) // slice_type: P (all slices)
    .ue(0) // pic_parameter_set_id
    .u(4, frameNum % 16) // frame_num
    .u(1, 0) // num_ref_idx_active_override_flag
    .u(1, 0) // ref_pic_list_modification_flag_l0
    .u(1, 0) // adaptive_ref_pic_marking_mode_flag
    .se(0) // slice_qp_delta
    .ue(1) // disable_deblocking_filter_idc
    .ue(mbs); // mb_skip_run: the whole picture
  return nal(2, 1, b.trailing());
}

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};
const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n & 0xffff);
  return b;
};
const box = (type: string, ...parts: Buffer[]) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([u32(body.length + 8), Buffer.from(type, 'latin1'), body]);
};
const full = (type: string, version: number, flags: number, ...parts: Buffer[]) =>
  box(type, u32((version << 24) | flags), ...parts);
const MATRIX = Buffer.concat([0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000].map(u32));

export interface Mp4Options {
  /** Display size (the track header's), as the simulated post has it. */
  width: number;
  height: number;
  /** Running time in seconds (default 3). */
  seconds?: number;
  /** Frames per second (default 10). */
  fps?: number;
}

const TIMESCALE = 1000;
const CODED_WIDTH = 144;

/** A playable MP4 for `key` (the same key, the same bytes). */
export function makeMp4(key: string, opts: Mp4Options): Buffer {
  const seed = createHash('sha256').update(key).digest();
  const fps = opts.fps ?? 10;
  const frames = Math.max(1, Math.round((opts.seconds ?? 3) * fps));
  const delta = Math.round(TIMESCALE / fps);
  const duration = frames * delta;
  const mbsWide = CODED_WIDTH / 16;
  const mbsHigh = Math.max(1, Math.round((CODED_WIDTH * opts.height) / opts.width / 16));
  const codedW = mbsWide * 16;
  const codedH = mbsHigh * 16;
  const spsNal = sps(mbsWide, mbsHigh);
  const ppsNal = pps();
  const samples = [idrSlice(mbsWide, mbsHigh, seed)];
  for (let i = 1; i < frames; i++) samples.push(skipSlice(i, mbsWide * mbsHigh));
  const sampleData = samples.map((s) => Buffer.concat([u32(s.length), s])); // 4-byte NAL lengths (avcC)

  const ftyp = box('ftyp', Buffer.from('isom'), u32(512), Buffer.from('isomiso2avc1mp41'));
  const avcC = box(
    'avcC',
    Buffer.from([1, spsNal[1]!, spsNal[2]!, spsNal[3]!, 0xff, 0xe1]),
    u16(spsNal.length),
    spsNal,
    Buffer.from([1]),
    u16(ppsNal.length),
    ppsNal,
  );
  const avc1 = box(
    'avc1',
    Buffer.alloc(6),
    u16(1), // data_reference_index
    Buffer.alloc(16), // pre_defined, reserved
    u16(codedW),
    u16(codedH),
    u32(0x00480000),
    u32(0x00480000),
    u32(0),
    u16(1), // frame_count
    Buffer.alloc(32), // compressorname
    u16(0x18),
    u16(0xffff),
    avcC,
  );
  const moovWith = (chunkOffset: number) => {
    const stbl = box(
      'stbl',
      full('stsd', 0, 0, u32(1), avc1),
      full('stts', 0, 0, u32(1), u32(frames), u32(delta)),
      full('stss', 0, 0, u32(1), u32(1)),
      full('stsc', 0, 0, u32(1), u32(1), u32(frames), u32(1)),
      full('stsz', 0, 0, u32(0), u32(frames), ...sampleData.map((s) => u32(s.length))),
      full('stco', 0, 0, u32(1), u32(chunkOffset)),
    );
    const minf = box(
      'minf',
      full('vmhd', 0, 1, Buffer.alloc(8)),
      box('dinf', full('dref', 0, 0, u32(1), full('url ', 0, 1))),
      stbl,
    );
    const mdia = box(
      'mdia',
      full('mdhd', 0, 0, u32(0), u32(0), u32(TIMESCALE), u32(duration), u16(0x55c4), u16(0)),
      full('hdlr', 0, 0, u32(0), Buffer.from('vide'), Buffer.alloc(12), Buffer.from('VideoHandler\0')),
      minf,
    );
    const tkhd = full(
      'tkhd',
      0,
      3,
      u32(0),
      u32(0),
      u32(1), // track_ID
      u32(0),
      u32(duration),
      Buffer.alloc(8),
      u16(0),
      u16(0),
      u16(0),
      u16(0),
      MATRIX,
      u32(opts.width * 65536),
      u32(opts.height * 65536),
    );
    const mvhd = full(
      'mvhd',
      0,
      0,
      u32(0),
      u32(0),
      u32(TIMESCALE),
      u32(duration),
      u32(0x00010000), // rate
      u16(0x0100), // volume
      Buffer.alloc(10),
      MATRIX,
      Buffer.alloc(24),
      u32(2), // next_track_ID
    );
    return box('moov', mvhd, box('trak', tkhd, mdia));
  };
  const moovLength = moovWith(0).length;
  const moov = moovWith(ftyp.length + moovLength + 8);
  return Buffer.concat([ftyp, moov, box('mdat', ...sampleData)]);
}

/**
 * `file` grown to `totalBytes` by a trailing `free` box of zeros, as a stream: the bytes are made
 * as they are read, 64 KiB at a time, and never held together.
 */
export function paddedMp4(file: Buffer, totalBytes: number): { stream: Readable; length: number } {
  const pad = totalBytes - file.length;
  if (pad < 8) return { stream: Readable.from([file]), length: file.length };
  const head = Buffer.concat([file, u32(pad), Buffer.from('free')]);
  const zeros = Buffer.alloc(64 * 1024);
  let left = pad - 8;
  let sentHead = false;
  const stream = new Readable({
    read() {
      if (!sentHead) {
        sentHead = true;
        this.push(head);
        return;
      }
      if (left <= 0) {
        this.push(null);
        return;
      }
      const n = Math.min(left, zeros.length);
      left -= n;
      this.push(n === zeros.length ? zeros : zeros.subarray(0, n));
    },
  });
  return { stream, length: totalBytes };
}
