/**
 * RSS high-water marks, sampled on a timer: per phase and overall. process.resourceUsage().maxRSS
 * is the kernel's exact figure for the whole run; sampling gives the per-phase split.
 */
export class MemorySampler {
  static readonly INTERVAL_MS = 50;
  private peak = 0;
  private phasePeak = 0;
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => this.sample(), MemorySampler.INTERVAL_MS);
    this.timer.unref();
    this.sample();
  }

  private sample(): void {
    const rss = process.memoryUsage.rss();
    if (rss > this.peak) this.peak = rss;
    if (rss > this.phasePeak) this.phasePeak = rss;
  }

  /** Start a phase: its high-water mark starts from the current RSS. */
  phase(_label: string): void {
    this.phasePeak = 0;
    this.sample();
  }

  end(): { peakRssMb: number } {
    this.sample();
    return { peakRssMb: this.phasePeak / 1024 / 1024 };
  }

  /** The whole run's sampled high-water mark, in MB. */
  overall(): number {
    this.sample();
    return this.peak / 1024 / 1024;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
