"use strict";
/**
 * The server's stderr, line by line, into the log output channel at the right level.
 *
 * The server logs `2025-01-02 03:04:05,678 INFO lsp_infer.server: message` (Python logging);
 * the channel adds its own time stamp, so the server's is dropped. Lines without a level
 * (tracebacks, llama.cpp's own output) keep the level of the line before them.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.parseServerLogLine = parseServerLogLine;
exports.failureHint = failureHint;
const PYTHON_LEVELS = {
    DEBUG: 'debug',
    INFO: 'info',
    WARNING: 'warn',
    WARN: 'warn',
    ERROR: 'error',
    CRITICAL: 'error',
    FATAL: 'error',
};
const LOG_LINE = /^(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)?\s+)?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b:?\s*(.*)$/;
function parseServerLogLine(line, previous = 'info') {
    const text = line.replace(/\s+$/, '');
    const match = LOG_LINE.exec(text);
    if (match) {
        return { level: PYTHON_LEVELS[match[1]], text: match[2] };
    }
    if (/^Traceback \(most recent call last\)/.test(text)) {
        return { level: 'error', text };
    }
    return { level: previous, text };
}
/** A well-known failure in a stderr line, with the fix to show when the server then exits. */
function failureHint(line) {
    if (/No module named '?lsp_infer/.test(line)) {
        return "lsp-infer is not installed in the Python set in lspInfer.server.pythonPath: run python -m pip install 'lsp-infer[model]' with that Python.";
    }
    if (/No module named '?llama_cpp/.test(line)) {
        return "llama-cpp-python is missing: reinstall the server with pip install 'lsp-infer[model]'.";
    }
    if (/(?:python|Python) 3\.\d+ .*required|requires-python/i.test(line)) {
        return 'lsp-infer needs Python 3.10 or newer.';
    }
    return undefined;
}
//# sourceMappingURL=serverLog.js.map