import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { definitionFigures, escapeHtml, figures, formatMs, latencyChart, latencyPoints, nextEditFigures, nextEditKinds, niceCeiling, rateBars, rates, statsHtml } from '../src/statsView';

/** A stats answer shaped like the server's (lsp_infer/stats.py, lsp_infer/feedback.py). */
const STATS = {
  requests: 40,
  latencyMs: { p50: 180.4, p95: 1234.5, p99: 2000, max: 2100, count: 40 },
  latencyByMinute: {
    bucketSeconds: 60,
    points: [
      { t: 120, count: 3, p50: 200, p95: 900 },
      { t: 60, count: 2, p50: 100, p95: 400 },
      { t: 'x', count: 1, p50: 1, p95: 1 },
    ],
  },
  suggestions: {
    shown: 10,
    accepted: 4,
    partlyAccepted: 1,
    dismissed: 5,
    hidden: 3,
    acceptanceRate: 0.4,
    charactersAccepted: 77,
    shownToAcceptedMs: { p50: 900, p95: 4000, max: 4000, count: 4 },
    byLength: { '1-15': { shown: 6, accepted: 3 }, '16-40': { shown: 4, accepted: 1 }, '41-100': { shown: 0, accepted: 0 } },
    byLines: { '1': { shown: 9, accepted: 4 }, '2-4': { shown: 1, accepted: 0 } },
    byExtraContext: { with: { shown: 2, accepted: 2 }, without: { shown: 8, accepted: 2 } },
    byConfidence: {
      '0-0.2': { shown: 0, accepted: 0, acceptanceRate: null, hidden: 2 },
      '0.2-0.4': { shown: 1, accepted: 0, acceptanceRate: 0, hidden: 1 },
      '0.4-0.6': { shown: 2, accepted: 1, acceptanceRate: 0.5, hidden: 0 },
      '0.6-0.8': { shown: 3, accepted: 1, acceptanceRate: 0.333, hidden: 0 },
      '0.8-1': { shown: 3, accepted: 2, acceptanceRate: 0.667, hidden: 0 },
      unknown: { shown: 1, accepted: 0, acceptanceRate: 0, hidden: 0 },
    },
  },
};

/** The "All counters" rows of a page as "key value" lines. */
function flattenAll(page: string): string {
  const all = page.split('<summary>All counters</summary>')[1] ?? '';
  return [...all.matchAll(/<tr><td>([^<]*)<\/td><td class="value">([^<]*)<\/td><\/tr>/g)].map((m) => `${m[1]} ${m[2]}`).join('\n');
}

/** The numbers in an SVG attribute list, e.g. a polyline's points. */
function coordinates(svg: string, cls: string): number[][] {
  const match = new RegExp(`<polyline class="${cls}" fill="none" points="([^"]*)"`).exec(svg);
  assert.ok(match, `a ${cls} line`);
  return match[1].split(' ').map((pair) => pair.split(',').map(Number));
}

describe('the stats view', () => {
  test('latency points: sorted by time, malformed ones skipped', () => {
    assert.deepEqual(latencyPoints(STATS), [
      { t: 60, count: 2, p50: 100, p95: 400 },
      { t: 120, count: 3, p50: 200, p95: 900 },
    ]);
    assert.deepEqual(latencyPoints({}), []);
    assert.deepEqual(latencyPoints({ latencyByMinute: { points: 'no' } }), []);
  });

  test('latency chart: p95 above p50, later minutes to the right, axis up to a round number', () => {
    const svg = latencyChart(latencyPoints(STATS), (t) => `T${t}`);
    const p50 = coordinates(svg, 'p50');
    const p95 = coordinates(svg, 'p95');
    assert.equal(p50.length, 2);
    assert.ok(p50[1][0] > p50[0][0], 'time goes right');
    assert.ok(p95[0][1] < p50[0][1] && p95[1][1] < p50[1][1], 'p95 is drawn higher (smaller y) than p50');
    assert.ok(p50[1][1] < p50[0][1], '200 ms is higher than 100 ms');
    assert.match(svg, />1.0 s</, 'the y axis tops at 1 s (900 ms rounded up)');
    assert.match(svg, />T60</);
    assert.match(svg, />T180</, 'the x axis ends with the last minute');
    assert.equal((svg.match(/<circle class="p50"/g) ?? []).length, 2);
  });

  test('latency chart: a minute without p95 draws only p50; no minutes at all says so', () => {
    const svg = latencyChart([{ t: 0, count: 1, p50: 50, p95: null }], () => '');
    assert.equal(coordinates(svg, 'p50').length, 1);
    assert.equal(coordinates(svg, 'p95')[0].length, 1, 'an empty p95 line');
    assert.match(latencyChart([]), /No suggestions answered yet/);
  });

  test('acceptance bars: width in proportion to accepted / shown', () => {
    const svg = rateBars([
      { label: 'a', shown: 4, accepted: 1 },
      { label: 'b', shown: 0, accepted: 0 },
    ]);
    const widths = [...svg.matchAll(/<rect class="bar" [^>]*width="([\d.]+)"/g)].map((m) => Number(m[1]));
    const track = Number(/<rect class="track" [^>]*width="([\d.]+)"/.exec(svg)![1]);
    assert.deepEqual(widths, [track / 4, 0]);
    assert.match(svg, />25 % \(1\/4\)</);
    assert.match(svg, />– \(0\/0\)</);
  });

  test('rate sections from the server\'s breakdowns', () => {
    const sections = rates(STATS);
    assert.deepEqual(sections.map((s) => s.title), [
      'All suggestions',
      'By length (characters)',
      'By lines',
      'By extra context (other files in the prompt)',
      'By confidence (of the first line)',
    ]);
    assert.deepEqual(sections[0].rows, [{ label: 'all', shown: 10, accepted: 4 }]);
    assert.deepEqual(sections[2].rows.map((r) => r.label), ['1 line', '2-4 lines']);
    assert.deepEqual(sections[3].rows[0], { label: 'with extra context', shown: 2, accepted: 2 }, 'no hidden count but by confidence');
    assert.deepEqual(rates({}).map((s) => s.title), ['All suggestions'], 'an older server: no breakdowns');
  });

  test('by confidence: the server\'s bands in its order, each with its hidden count', () => {
    const section = rates(STATS).find((s) => s.title === 'By confidence (of the first line)');
    assert.ok(section);
    assert.deepEqual(section.rows, [
      { label: 'confidence 0-0.2', shown: 0, accepted: 0, hidden: 2 },
      { label: 'confidence 0.2-0.4', shown: 1, accepted: 0, hidden: 1 },
      { label: 'confidence 0.4-0.6', shown: 2, accepted: 1, hidden: 0 },
      { label: 'confidence 0.6-0.8', shown: 3, accepted: 1, hidden: 0 },
      { label: 'confidence 0.8-1', shown: 3, accepted: 2, hidden: 0 },
      { label: 'confidence unknown', shown: 1, accepted: 0, hidden: 0 },
    ]);
    const svg = rateBars(section.rows);
    const hidden = [...svg.matchAll(/<text class="hidden-count" [^>]*>([^<]*)</g)].map((m) => m[1]);
    assert.deepEqual(hidden, ['2 hidden', '1 hidden', '0 hidden', '0 hidden', '0 hidden', '0 hidden']);
    assert.match(svg, />– \(0\/0\)</, 'a band with nothing shown has no rate');
    assert.match(svg, />67 % \(2\/3\)</);
    const page = statsHtml(STATS, { cspSource: 'vscode-webview://x', when: new Date(0) });
    assert.match(page, /<h3>By confidence \(of the first line\)<\/h3>/);
    assert.match(page, />confidence 0\.2-0\.4</);
    assert.match(page, />1 hidden</);
    assert.match(page, /<td>Hidden \(model unsure\)<\/td><td class="value">3<\/td>/);
    assert.ok(!/hidden-count/.test(rateBars(rates(STATS)[1].rows)), 'other breakdowns have no hidden column');
    assert.ok(!rates({ suggestions: { byLength: {} } }).some((s) => s.title.startsWith('By confidence')), 'an older server: no such section');
  });

  test('key figures', () => {
    assert.deepEqual(figures(STATS), [
      ['Requests', '40'],
      ['Latency p50 / p95', '180 ms / 1.2 s'],
      ['Suggestions shown', '10'],
      ['Accepted', '4'],
      ['Partly accepted', '1'],
      ['Dismissed', '5'],
      ['Hidden (model unsure)', '3'],
      ['Acceptance rate', '40 %'],
      ['Characters accepted', '77'],
      ['Shown → accepted p50 / p95', '900 ms / 4.0 s'],
    ]);
    assert.deepEqual(figures({}).at(7), ['Acceptance rate', '–']);
    assert.deepEqual(figures({}).at(6), ['Hidden (model unsure)', '–'], 'an older server: no hidden count');
  });

  test('the page: no script, nothing loaded from elsewhere, text escaped', () => {
    const html = statsHtml({ ...STATS, weird: '<img src=x onerror=alert(1)>' }, { cspSource: 'vscode-webview://x', when: new Date(0) });
    assert.ok(!/<script/i.test(html));
    assert.ok(!/https?:\/\//.test(html), 'no URL to load anything from');
    assert.match(html, /Content-Security-Policy" content="default-src 'none'; style-src vscode-webview:\/\/x 'unsafe-inline';"/);
    assert.ok(!html.includes('<img'), 'escaped');
    assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
    assert.match(html, /<svg class="chart"/);
    assert.match(html, /<svg class="bars"/);
    assert.match(html, /never sent anywhere/);
  });

  test('definitions from the editor: its figures, with the share of names found', () => {
    const stats = {
      ...STATS,
      definitions: { supported: true, requests: 12, asked: 40, answered: 30, used: 9, timedOut: 2, failed: 1, p50Ms: 35.2, p95Ms: 1200 },
    };
    assert.deepEqual(definitionFigures(stats), [
      ['Supported by this editor', 'yes'],
      ['Requests to the editor', '12'],
      ['Names asked', '40'],
      ['Definitions found', '30 (75 %)'],
      ['Used in a prompt', '9'],
      ['Not answered in time', '2'],
      ['Failed (error or malformed)', '1'],
      ['Answer time p50 / p95', '35 ms / 1.2 s'],
    ]);
    const page = statsHtml(stats, { cspSource: 'vscode-webview://x', when: new Date(0) });
    assert.match(page, /<h2>Definitions from the editor's language servers<\/h2>/);
    assert.match(page, /<table class="definitions">.*<td>Definitions found<\/td><td class="value">30 \(75 %\)<\/td>/s);
    assert.ok(!/started without the editor/.test(page));
    assert.match(flattenAll(page), /definitions\.timedOut 2/, 'and among all counters');
  });

  test('definitions: none yet, not supported, or an older server without them', () => {
    const none = { definitions: { supported: false, requests: 0, asked: 0, answered: 0, used: 0, timedOut: 0, failed: 0, p50Ms: null, p95Ms: null } };
    assert.deepEqual(definitionFigures(none)?.slice(3, 4), [['Definitions found', '0']], 'no share of nothing');
    assert.deepEqual(definitionFigures(none)?.at(-1), ['Answer time p50 / p95', '– / –']);
    assert.match(statsHtml(none, { cspSource: 'x', when: new Date(0) }), /started without the editor's definitions/);
    assert.equal(definitionFigures(STATS), undefined);
    assert.equal(definitionFigures({ definitions: 'odd' }), undefined);
    assert.deepEqual(definitionFigures({ definitions: {} })?.[0], ['Supported by this editor', '–']);
    const page = statsHtml(STATS, { cspSource: 'vscode-webview://x', when: new Date(0) });
    assert.ok(!/Definitions from the editor/.test(page), 'no section for an older server');
    assert.ok(!/class="definitions"/.test(page));
  });

  test('helpers', () => {
    assert.deepEqual([0, 0.3, 1, 7, 12, 450, 1001].map(niceCeiling), [1, 0.5, 1, 10, 20, 500, 2000]);
    assert.deepEqual([12.4, 999, 1000, 15000].map(formatMs), ['12 ms', '999 ms', '1.0 s', '15 s']);
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('next-edit suggestions in the stats view', () => {
  /** `nextEdit` as the server reports it (lsp_infer/next_edit/service.py). */
  const NEXT_EDIT = {
    requests: 12,
    predicted: 5,
    shown: 4,
    accepted: 3,
    rejected: 1,
    byKind: { rename: { predicted: 5, shown: 4, accepted: 3, rejected: 1 } },
    p50Ms: 2.5,
    p95Ms: 9,
  };

  test('its figures, with the acceptance rate and the answer times', () => {
    assert.deepEqual(nextEditFigures({ nextEdit: NEXT_EDIT }), [
      ['Requests', '12'],
      ['Predicted (offered)', '5'],
      ['Shown', '4'],
      ['Accepted', '3'],
      ['Rejected', '1'],
      ['Acceptance rate', '75 % (3/4)'],
      ['Answer time p50 / p95', '3 ms / 9 ms'],
    ]);
    assert.deepEqual(nextEditKinds({ nextEdit: NEXT_EDIT }), [
      { kind: 'rename', predicted: '5', shown: '4', accepted: '3', rejected: '1', rate: '75 % (3/4)' },
    ]);
  });

  test('missing keys: "–"; no answer times, no row for them; an older server: no section', () => {
    assert.deepEqual(nextEditFigures({ nextEdit: { requests: 2 } }), [
      ['Requests', '2'],
      ['Predicted (offered)', '–'],
      ['Shown', '–'],
      ['Accepted', '–'],
      ['Rejected', '–'],
      ['Acceptance rate', '–'],
    ]);
    assert.deepEqual(nextEditKinds({ nextEdit: { byKind: { rename: 'x', repeat: { shown: 0 } } } }), [
      { kind: 'rename', predicted: '–', shown: '–', accepted: '–', rejected: '–', rate: '–' },
      { kind: 'repeat', predicted: '–', shown: '0', accepted: '–', rejected: '–', rate: '–' },
    ]);
    for (const stats of [{}, { nextEdit: null }, { nextEdit: [1] }, null, 'x']) {
      assert.equal(nextEditFigures(stats), undefined, JSON.stringify(stats));
      assert.deepEqual(nextEditKinds(stats), []);
    }
    const page = statsHtml({ requests: 1 }, { cspSource: 'x', when: new Date(0) });
    assert.ok(!page.includes('Next-edit suggestions'));
  });

  test('the page: a section with the figures and a table by kind; every counter below', () => {
    const page = statsHtml({ ...STATS, nextEdit: NEXT_EDIT }, { cspSource: 'x', when: new Date(0) });
    assert.match(page, /<h2>Next-edit suggestions<\/h2>/);
    assert.match(page, /<table class="next-edit"><tr><td>Requests<\/td><td class="value">12<\/td><\/tr>/);
    assert.match(page, /<table class="next-edit-kinds">.*<tr><td>rename<\/td><td class="value">5<\/td><td class="value">4<\/td><td class="value">3<\/td><td class="value">1<\/td><td class="value">75 % \(3\/4\)<\/td><\/tr>/);
    assert.match(flattenAll(page), /^nextEdit\.byKind\.rename\.accepted 3$/m);
    // A kind is the server's text: escaped.
    const odd = statsHtml({ nextEdit: { byKind: { '<b>': { shown: 1 } } } }, { cspSource: 'x', when: new Date(0) });
    assert.ok(odd.includes('<td>&lt;b&gt;</td>') && !odd.includes('<td><b></td>'));
  });
});
