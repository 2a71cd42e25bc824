/** Timers run by hand: `schedule` records them (returning their cancel), `fire()` runs them all. */
export class Timers {
  pending: { run: () => void; ms: number }[] = [];
  schedule = (run: () => void, ms: number) => {
    const timer = { run, ms };
    this.pending.push(timer);
    return () => (this.pending = this.pending.filter((t) => t !== timer));
  };
  fire(): void {
    for (const timer of this.pending.splice(0)) {
      timer.run();
    }
  }
}
