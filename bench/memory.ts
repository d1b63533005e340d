import { PerformanceObserver } from 'node:perf_hooks';
/**
 * RSS high-water marks, sampled on a timer: per phase and overall. process.resourceUsage().maxRSS
 * is the kernel's exact figure for the whole process; sampling gives the per-phase split and what
 * the RSS was made of at its peak.
 */
export interface MemoryStats {
  rssMb: number;
  phasePeakRssMb: number;
  /** The kernel's high-water mark for the whole process. */
  maxRssMb: number;
  cpuUserS: number;
  cpuSystemS: number;
  /** Garbage collection pauses of the main thread since the process started: count and seconds. */
  gc: { count: number; seconds: number };
  /** process.memoryUsage() in MB at the sampled overall peak. */
  atPeak: { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
}

const MB = 1024 * 1024;

export class MemorySampler {
  static readonly INTERVAL_MS = 50;
  private peak = 0;
  private phasePeak = 0;
  private atPeak: NodeJS.MemoryUsage = process.memoryUsage();
  private readonly timer: NodeJS.Timeout;
  private readonly gc = { count: 0, seconds: 0 };
  private readonly gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      this.gc.count++;
      this.gc.seconds += e.duration / 1000;
    }
  });

  constructor() {
    this.timer = setInterval(() => this.sample(), MemorySampler.INTERVAL_MS);
    this.timer.unref();
    this.gcObserver.observe({ entryTypes: ['gc'] });
    this.sample();
  }

  private sample(): void {
    const rss = process.memoryUsage.rss();
    if (rss > this.peak) {
      this.peak = rss;
      this.atPeak = process.memoryUsage();
    }
    if (rss > this.phasePeak) this.phasePeak = rss;
  }

  /** Start a phase: its high-water mark starts from the current RSS. */
  phase(): void {
    this.phasePeak = 0;
    this.sample();
  }

  end(): { peakRssMb: number } {
    this.sample();
    return { peakRssMb: this.phasePeak / MB };
  }

  /** The whole run's sampled high-water mark, in MB. */
  overall(): number {
    this.sample();
    return this.peak / MB;
  }

  stats(): MemoryStats {
    this.sample();
    const cpu = process.cpuUsage();
    const p = this.atPeak;
    return {
      rssMb: process.memoryUsage.rss() / MB,
      phasePeakRssMb: this.phasePeak / MB,
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      cpuUserS: cpu.user / 1e6,
      cpuSystemS: cpu.system / 1e6,
      gc: { ...this.gc },
      atPeak: {
        rss: p.rss / MB,
        heapTotal: p.heapTotal / MB,
        heapUsed: p.heapUsed / MB,
        external: p.external / MB,
        arrayBuffers: p.arrayBuffers / MB,
      },
    };
  }

  stop(): void {
    clearInterval(this.timer);
    this.gcObserver.disconnect();
  }
}
