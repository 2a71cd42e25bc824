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

/** A cancellation token the test cancels by hand, counting the listeners let go. */
export class Cancel {
  private listeners: (() => void)[] = [];
  disposed = 0;
  readonly token = {
    onCancellationRequested: (listener: () => void) => {
      this.listeners.push(listener);
      return { dispose: () => (this.disposed += 1) };
    },
  };
  cancel(): void {
    this.listeners.forEach((listener) => listener());
  }
}

/** A real timer (setTimeout), as the extension's default. */
export function realSchedule(run: () => void, ms: number): () => void {
  const timer = setTimeout(run, ms);
  return () => clearTimeout(timer);
}
