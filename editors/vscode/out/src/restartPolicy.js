"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RestartPolicy = void 0;
/**
 * When a crashed server is restarted: like vscode-languageclient's default error handler,
 * up to 4 restarts; a 5th crash within 3 minutes of the first counted one gives up.
 */
class RestartPolicy {
    maxRestarts;
    windowMs;
    now;
    crashes = [];
    constructor(maxRestarts = 4, windowMs = 3 * 60 * 1000, now = Date.now) {
        this.maxRestarts = maxRestarts;
        this.windowMs = windowMs;
        this.now = now;
    }
    /** Record a crash; `restart` says whether to start the server again. */
    onCrash() {
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
    /** A start the user asked for (or a settings change) begins a fresh count. */
    reset() {
        this.crashes = [];
    }
}
exports.RestartPolicy = RestartPolicy;
//# sourceMappingURL=restartPolicy.js.map