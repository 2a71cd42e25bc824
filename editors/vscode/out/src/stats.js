"use strict";
/**
 * `lspInfer/stats` answers, formatted for the output channel and a quick pick.
 *
 * The server's counters are still growing (requests, answered, cancelled, superseded,
 * cacheHits, latency percentiles, …), so nothing here knows their names: any JSON object is
 * flattened to dotted keys, in the server's order.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.STATS_METHOD = void 0;
exports.formatValue = formatValue;
exports.flattenStats = flattenStats;
exports.formatStats = formatStats;
exports.statsErrorMessage = statsErrorMessage;
exports.STATS_METHOD = 'lspInfer/stats';
function formatValue(value) {
    if (value === null || value === undefined) {
        return '–';
    }
    if (typeof value === 'number') {
        if (!Number.isFinite(value)) {
            return String(value);
        }
        if (Number.isInteger(value)) {
            return String(value);
        }
        return value.toFixed(Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 1 ? 1 : 3);
    }
    if (typeof value === 'string') {
        return value;
    }
    if (typeof value === 'boolean') {
        return value ? 'yes' : 'no';
    }
    if (Array.isArray(value)) {
        return value.map(formatValue).join(', ');
    }
    return JSON.stringify(value);
}
/** Nested objects become dotted keys: `{"latencyMs": {"p50": 12}}` → `latencyMs.p50  12`. */
function flattenStats(value, prefix = '') {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        return [{ key: prefix || 'result', value: formatValue(value) }];
    }
    const rows = [];
    for (const [key, inner] of Object.entries(value)) {
        const name = prefix ? `${prefix}.${key}` : key;
        if (typeof inner === 'object' && inner !== null && !Array.isArray(inner)) {
            const nested = flattenStats(inner, name);
            rows.push(...(nested.length > 0 ? nested : [{ key: name, value: '{}' }]));
        }
        else {
            rows.push({ key: name, value: formatValue(inner) });
        }
    }
    return rows;
}
/** Lines for the output channel: a heading, then aligned `key  value` rows. */
function formatStats(value, when = new Date()) {
    const rows = flattenStats(value);
    const width = Math.max(0, ...rows.map((row) => row.key.length));
    const heading = `lsp-infer stats (${when.toISOString()})`;
    if (typeof value === 'object' && value !== null && !Array.isArray(value) && rows.length === 0) {
        return [heading, '  (no counters yet)'];
    }
    return [heading, ...rows.map((row) => `  ${row.key.padEnd(width)}  ${row.value}`)];
}
/** What to tell the user when the request failed (an older server has no such method). */
function statsErrorMessage(error) {
    const code = typeof error === 'object' && error !== null ? error.code : undefined;
    if (code === -32601) {
        return 'This lsp-infer server does not answer lspInfer/stats yet: update it (pip install -U \'lsp-infer[model]\').';
    }
    const message = error instanceof Error ? error.message : String(error);
    return `lsp-infer: could not get stats: ${message}`;
}
//# sourceMappingURL=stats.js.map