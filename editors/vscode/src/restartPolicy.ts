/**
 * When a crashed server is restarted: like vscode-languageclient's default error handler,
 * up to 4 restarts; a 5th crash within 3 minutes of the first counted one gives up.
 */
export class RestartPolicy {
  private crashes: number[] = [];

  constructor(
    readonly maxRestarts = 4,
    readonly windowMs = 3 * 60 * 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Record a crash; `restart` says whether to start the server again. */
  onCrash(): { restart: boolean; crashes: number } {
    this.crashes.push(this.now());
    if (this.crashes.length <= this.maxRestarts) {
      return { restart: true, crashes: this.crashes.length };
    }
    const span = this.crashes[this.crashes.length - 1] - this.crashes[0];
    if (span <= this.windowMs) {
      return { restart: false, crashes: this.crashes.length };
    }
    this.crashes.shift();
    return { restart: true, crashes: this.crashes.length };
  }

  /** A polite pause before the n-th restart in a row: 0.5 s, 1 s, 2 s, 4 s, at most 8 s. */
  delayMs(crashes: number): number {
    return Math.min(500 * 2 ** Math.max(0, crashes - 1), 8000);
  }

  /** A start the user asked for (or a settings change) begins a fresh count. */
  reset(): void {
    this.crashes = [];
  }
}
