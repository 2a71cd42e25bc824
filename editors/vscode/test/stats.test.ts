import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { flattenStats, formatStats, formatValue, statsErrorMessage } from '../src/stats';

const SAMPLE = {
  requests: 120,
  answered: 97,
  cancelled: 15,
  superseded: 8,
  cacheHits: 40,
  latencyMs: { p50: 182.456, p90: 611.04, p99: 1503.9 },
  model: { name: 'qwen2.5-coder-0.5b', loaded: true },
  recent: [1, 2.5],
  last: null,
};

describe('stats formatting', () => {
  test('nested objects flatten to dotted keys in the server\'s order', () => {
    assert.deepEqual(flattenStats(SAMPLE), [
      { key: 'requests', value: '120' },
      { key: 'answered', value: '97' },
      { key: 'cancelled', value: '15' },
      { key: 'superseded', value: '8' },
      { key: 'cacheHits', value: '40' },
      { key: 'latencyMs.p50', value: '182' },
      { key: 'latencyMs.p90', value: '611' },
      { key: 'latencyMs.p99', value: '1504' },
      { key: 'model.name', value: 'qwen2.5-coder-0.5b' },
      { key: 'model.loaded', value: 'yes' },
      { key: 'recent', value: '1, 2.5' },
      { key: 'last', value: '–' },
    ]);
  });

  test('the server\'s shape: counters, and summaries whose values may be null', () => {
    const rows = flattenStats({
      requests: 3,
      cacheHits: 0,
      latencyMs: { p50: 182.0, p95: 1234.5678, p99: null, max: 2000.25, count: 12.0 },
      queueDepth: 0,
    });
    assert.deepEqual(rows, [
      { key: 'requests', value: '3' },
      { key: 'cacheHits', value: '0' },
      { key: 'latencyMs.p50', value: '182' },
      { key: 'latencyMs.p95', value: '1235' },
      { key: 'latencyMs.p99', value: '–' },
      { key: 'latencyMs.max', value: '2000' },
      { key: 'latencyMs.count', value: '12' },
      { key: 'queueDepth', value: '0' },
    ]);
  });

  test('output lines: heading, then aligned rows', () => {
    const lines = formatStats({ requests: 3, latencyMs: { p50: 12.25 } }, new Date('2025-01-02T03:04:05Z'));
    assert.deepEqual(lines, ['lsp-infer stats (2025-01-02T03:04:05.000Z)', '  requests       3', '  latencyMs.p50  12.3']);
  });

  test('empty objects and non-objects', () => {
    assert.deepEqual(formatStats({}, new Date(0)).slice(1), ['  (no counters yet)']);
    assert.deepEqual(flattenStats({ a: {} }), [{ key: 'a', value: '{}' }]);
    assert.deepEqual(flattenStats(null), [{ key: 'result', value: '–' }]);
    assert.deepEqual(flattenStats('odd'), [{ key: 'result', value: 'odd' }]);
  });

  test('number formatting', () => {
    assert.equal(formatValue(0.01234), '0.012');
    assert.equal(formatValue(3.14159), '3.1');
    assert.equal(formatValue(1e21), '1e+21');
    assert.equal(formatValue(Number.NaN), 'NaN');
  });

  test('an older server without lspInfer/stats gets an "update it" message', () => {
    assert.match(statsErrorMessage({ code: -32601, message: 'Method not found' }), /does not answer lspInfer\/stats yet/);
    assert.match(statsErrorMessage(new Error('boom')), /could not get stats: boom/);
  });
});
