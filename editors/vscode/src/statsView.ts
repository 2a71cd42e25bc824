/**
 * The "Show Stats" view: `lspInfer/stats` drawn as a page of inline SVG (latency percentiles
 * per minute, acceptance rates as bars) with the key figures, the definitions asked of the
 * editor and the next-edit suggestions (when the server reports them), and every counter below.
 * Pure: builds HTML strings; nothing is loaded from anywhere (the webview runs no script).
 */
import { flattenStats, formatValue } from './stats';

export interface LatencyPoint {
  /** Start of the minute, Unix seconds. */
  readonly t: number;
  readonly count: number;
  readonly p50: number | null;
  readonly p95: number | null;
}

export interface Rate {
  readonly label: string;
  readonly shown: number;
  readonly accepted: number;
  /** By confidence only: suggestions not shown at all, the model unsure of their first line. */
  readonly hidden?: number;
}

type Json = Record<string, unknown>;

function object(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function number(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** `latencyByMinute.points` of a stats answer, oldest first; malformed points are skipped. */
export function latencyPoints(stats: unknown): LatencyPoint[] {
  const points = object(object(stats).latencyByMinute).points;
  if (!Array.isArray(points)) {
    return [];
  }
  return points
    .map(object)
    .filter((p) => number(p.t) !== null)
    .map((p) => ({ t: number(p.t)!, count: number(p.count) ?? 0, p50: number(p.p50), p95: number(p.p95) }))
    .sort((a, b) => a.t - b.t);
}

/**
 * The acceptance-rate bars: all suggestions, then by length, by lines, by extra context and by
 * the first line's confidence (with how many were hidden for it: completion.minConfidence).
 * Groups come in the server's order (its buckets, smallest first).
 */
export function rates(stats: unknown): { title: string; rows: Rate[] }[] {
  const suggestions = object(object(stats).suggestions);
  const rate = (label: string, group: Json, hidden = false): Rate => ({
    label,
    shown: number(group.shown) ?? 0,
    accepted: number(group.accepted) ?? 0,
    ...(hidden ? { hidden: number(group.hidden) ?? 0 } : {}),
  });
  const groups = (key: string, name: (label: string) => string, hidden = false) =>
    Object.entries(object(suggestions[key])).map(([label, group]) => rate(name(label), object(group), hidden));
  return [
    { title: 'All suggestions', rows: [rate('all', suggestions)] },
    { title: 'By length (characters)', rows: groups('byLength', (l) => l) },
    { title: 'By lines', rows: groups('byLines', (l) => `${l} line${l === '1' ? '' : 's'}`) },
    { title: 'By extra context (other files in the prompt)', rows: groups('byExtraContext', (l) => `${l} extra context`) },
    { title: 'By confidence (of the first line)', rows: groups('byConfidence', confidenceLabel, true) },
  ].filter((section) => section.rows.length > 0);
}

/** "confidence 0.2-0.4"; "unknown" is where none was reported (team model, cached answers). */
function confidenceLabel(band: string): string {
  return band === 'unknown' ? 'confidence unknown' : `confidence ${band}`;
}

/** A round number at or above `value` (1, 2 or 5 times a power of ten) for an axis. */
export function niceCeiling(value: number): number {
  if (!(value > 0)) {
    return 1;
  }
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((candidate) => candidate >= value)!;
}

function hhmm(t: number): string {
  const date = new Date(t * 1000);
  return `${String(date.getHours()).padStart(2, '0')}:${String(date.getMinutes()).padStart(2, '0')}`;
}

const W = 560;
const H = 200;
const PAD = { left: 56, right: 12, top: 12, bottom: 28 };

/**
 * Latency per minute as SVG: p50 (solid) and p95 (dashed) lines with a dot per minute, the
 * y axis in milliseconds from 0, the x axis from the first minute to the end of the last.
 */
export function latencyChart(points: readonly LatencyPoint[], timeLabel: (t: number) => string = hhmm): string {
  if (points.length === 0) {
    return '<p class="empty">No suggestions answered yet: latency over time appears here.</p>';
  }
  const start = points[0].t;
  const end = points[points.length - 1].t + 60;
  const top = niceCeiling(Math.max(...points.map((p) => Math.max(p.p95 ?? 0, p.p50 ?? 0))));
  const x = (t: number) => PAD.left + ((t + 30 - start) / (end - start)) * (W - PAD.left - PAD.right);
  const y = (ms: number) => PAD.top + (1 - ms / top) * (H - PAD.top - PAD.bottom);
  const line = (key: 'p50' | 'p95', cls: string) => {
    const drawn = points.filter((p) => p[key] !== null);
    const coords = drawn.map((p) => `${x(p.t).toFixed(1)},${y(p[key]!).toFixed(1)}`);
    const dots = coords.map((c) => `<circle class="${cls}" cx="${c.split(',')[0]}" cy="${c.split(',')[1]}" r="2.5"/>`).join('');
    return `<polyline class="${cls}" fill="none" points="${coords.join(' ')}"/>${dots}`;
  };
  const ticks = [0, top / 2, top]
    .map((ms) => `<line class="grid" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(ms)}" y2="${y(ms)}"/>` +
      `<text class="axis" x="${PAD.left - 6}" y="${y(ms) + 4}" text-anchor="end">${formatMs(ms)}</text>`)
    .join(''); // prettier-ignore
  const labels =
    `<text class="axis" x="${PAD.left}" y="${H - 8}">${escapeHtml(timeLabel(start))}</text>` +
    `<text class="axis" x="${W - PAD.right}" y="${H - 8}" text-anchor="end">${escapeHtml(timeLabel(end))}</text>`;
  const title = `<title>Suggestion latency per minute: p50 and p95 (${points.length} minute${points.length === 1 ? '' : 's'})</title>`;
  return `<svg class="chart" role="img" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">${title}${ticks}${labels}${line('p95', 'p95')}${line('p50', 'p50')}</svg>`;
}

export function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(ms >= 10000 ? 0 : 1)} s` : `${Math.round(ms)} ms`;
}

function percent(row: Rate): string {
  return row.shown > 0 ? `${Math.round((100 * row.accepted) / row.shown)} %` : '–';
}

/** Room right of the rates for the hidden counts (the rate text fills the chart's width). */
const HIDDEN_W = 80;

/**
 * Acceptance rates as horizontal bars, one per row: accepted / shown; rows that count hidden
 * suggestions (by confidence) get that count in a column of its own, right of the rate.
 */
export function rateBars(rows: readonly Rate[]): string {
  const rowHeight = 22;
  const barX = 190;
  const barW = W - barX - 110;
  const hidden = rows.some((row) => row.hidden !== undefined);
  const bars = rows
    .map((row, i) => {
      const yTop = i * rowHeight + 4;
      const width = row.shown > 0 ? (barW * row.accepted) / row.shown : 0;
      return (
        `<text class="label" x="0" y="${yTop + 13}">${escapeHtml(row.label)}</text>` +
        `<rect class="track" x="${barX}" y="${yTop}" width="${barW}" height="16" rx="2"/>` +
        `<rect class="bar" x="${barX}" y="${yTop}" width="${width.toFixed(1)}" height="16" rx="2"/>` +
        `<text class="value" x="${barX + barW + 8}" y="${yTop + 13}">${percent(row)} (${row.accepted}/${row.shown})</text>` +
        (row.hidden === undefined ? '' : `<text class="hidden-count" x="${W + 8}" y="${yTop + 13}">${row.hidden} hidden</text>`)
      );
    })
    .join('');
  const width = hidden ? W + HIDDEN_W : W;
  const height = rows.length * rowHeight + 8;
  const title = `Acceptance rate: accepted of shown${hidden ? '; hidden: not shown, the model unsure of the first line' : ''}`;
  return `<svg class="bars" role="img" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}"><title>${title}</title>${bars}</svg>`;
}

/** The key figures: [label, value] pairs. */
export function figures(stats: unknown): [string, string][] {
  const s = object(stats);
  const suggestions = object(s.suggestions);
  const latency = object(s.latencyMs);
  const toAccept = object(suggestions.shownToAcceptedMs);
  const ms = (value: unknown) => (number(value) === null ? '–' : formatMs(number(value)!));
  const rate = number(suggestions.acceptanceRate);
  return [
    ['Requests', formatValue(s.requests)],
    ['Latency p50 / p95', `${ms(latency.p50)} / ${ms(latency.p95)}`],
    ['Suggestions shown', formatValue(suggestions.shown)],
    ['Accepted', formatValue(suggestions.accepted)],
    ['Partly accepted', formatValue(suggestions.partlyAccepted)],
    ['Dismissed', formatValue(suggestions.dismissed)],
    // Answered empty: the model was unsure of the first line (completion.minConfidence).
    ['Hidden (model unsure)', formatValue(suggestions.hidden)],
    ['Acceptance rate', rate === null ? '–' : `${Math.round(rate * 100)} %`],
    ['Characters accepted', formatValue(suggestions.charactersAccepted)],
    ['Shown → accepted p50 / p95', `${ms(toAccept.p50)} / ${ms(toAccept.p95)}`],
  ];
}

/**
 * `definitions` of a stats answer (lspInfer/definitions: where names near the cursor are
 * defined, asked of the editor) as [label, value] pairs, or undefined from a server that has
 * no such object (an older one).
 */
export function definitionFigures(stats: unknown): [string, string][] | undefined {
  const d = object(stats).definitions;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) {
    return undefined;
  }
  const defs = d as Json;
  const ms = (value: unknown) => (number(value) === null ? '–' : formatMs(number(value)!));
  const asked = number(defs.asked);
  const answered = number(defs.answered);
  const share = asked !== null && asked > 0 && answered !== null ? ` (${Math.round((100 * answered) / asked)} %)` : '';
  return [
    ['Supported by this editor', defs.supported === undefined ? '–' : formatValue(defs.supported)],
    ['Requests to the editor', formatValue(defs.requests)],
    ['Names asked', formatValue(defs.asked)],
    ['Definitions found', `${formatValue(defs.answered)}${share}`],
    ['Used in a prompt', formatValue(defs.used)],
    ['Not answered in time', formatValue(defs.timedOut)],
    ['Failed (error or malformed)', formatValue(defs.failed)],
    ['Answer time p50 / p95', `${ms(defs.p50Ms)} / ${ms(defs.p95Ms)}`],
  ];
}

/** The definitions section: its figures, or a note when the editor did not offer them. */
function definitionsSection(stats: unknown): string {
  const rows = definitionFigures(stats);
  if (rows === undefined) {
    return '';
  }
  const table = `<table class="definitions">${rows.map(([label, value]) => `<tr><td>${escapeHtml(label)}</td><td class="value">${escapeHtml(value)}</td></tr>`).join('')}</table>`;
  const note =
    object(object(stats).definitions).supported === false
      ? '<p class="note">The server was started without the editor\'s definitions (lspInfer.context.definitions off at its start).</p>'
      : '';
  return `<h2>Definitions from the editor's language servers</h2>\n<p class="note">Where names near the cursor are defined, asked of VS Code in a pause (lspInfer/definitions), for the model's prompt.</p>\n${note}${table}\n`;
}

/** A count, or undefined for a missing or malformed one (an older server, a key it dropped). */
function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** "3 / 4 (75 %)": accepted of shown, or "–" before any is shown. */
function acceptance(acceptedCount: number | undefined, shown: number | undefined): string {
  if (acceptedCount === undefined || shown === undefined || shown <= 0) {
    return '–';
  }
  return `${Math.round((100 * acceptedCount) / shown)} % (${acceptedCount}/${shown})`;
}

/**
 * `nextEdit` of a stats answer (lspInfer/nextEdit: next-edit suggestions) as [label, value]
 * pairs, or undefined from a server that has no such object. A missing counter shows as "–".
 */
export function nextEditFigures(stats: unknown): [string, string][] | undefined {
  const n = object(stats).nextEdit;
  if (typeof n !== 'object' || n === null || Array.isArray(n)) {
    return undefined;
  }
  const next = n as Json;
  const ms = (value: unknown) => (number(value) === null ? '–' : formatMs(number(value)!));
  const rows: [string, string][] = [
    ['Requests', formatValue(next.requests)],
    ['Predicted (offered)', formatValue(next.predicted)],
    ['Shown', formatValue(next.shown)],
    ['Accepted', formatValue(next.accepted)],
    ['Rejected', formatValue(next.rejected)],
    ['Acceptance rate', acceptance(count(next.accepted), count(next.shown))],
  ];
  if (next.p50Ms !== undefined || next.p95Ms !== undefined) {
    rows.push(['Answer time p50 / p95', `${ms(next.p50Ms)} / ${ms(next.p95Ms)}`]);
  }
  return rows;
}

/** `nextEdit.byKind`: one row per kind of prediction (rename, …), in the server's order. */
export function nextEditKinds(stats: unknown): { kind: string; predicted: string; shown: string; accepted: string; rejected: string; rate: string }[] {
  const byKind = object(object(object(stats).nextEdit).byKind);
  return Object.entries(byKind).map(([kind, raw]) => {
    const counts = object(raw);
    return {
      kind,
      predicted: formatValue(counts.predicted),
      shown: formatValue(counts.shown),
      accepted: formatValue(counts.accepted),
      rejected: formatValue(counts.rejected),
      rate: acceptance(count(counts.accepted), count(counts.shown)),
    };
  });
}

/** The next-edit section: its figures and a table by kind, or nothing from an older server. */
function nextEditSection(stats: unknown): string {
  const rows = nextEditFigures(stats);
  if (rows === undefined) {
    return '';
  }
  const cell = (text: string) => `<td class="value">${escapeHtml(text)}</td>`;
  const table = `<table class="next-edit">${rows.map(([label, value]) => `<tr><td>${escapeHtml(label)}</td>${cell(value)}</tr>`).join('')}</table>`;
  const kinds = nextEditKinds(stats);
  const byKind =
    kinds.length === 0
      ? ''
      : '<h3>By kind</h3><table class="next-edit-kinds"><tr><th>kind</th><th>predicted</th><th>shown</th><th>accepted</th><th>rejected</th><th>acceptance</th></tr>' +
        kinds.map((k) => `<tr><td>${escapeHtml(k.kind)}</td>${[k.predicted, k.shown, k.accepted, k.rejected, k.rate].map(cell).join('')}</tr>`).join('') +
        '</table>';
  return `<h2>Next-edit suggestions</h2>\n<p class="note">Edits predicted from your last edits (lspInfer/nextEdit): shown where they go, applied with Tab, dismissed with Esc or by typing on.</p>\n${table}${byKind}\n`;
}

const STYLE = `
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 16px 16px; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.4em; } h3 { font-size: 0.95em; margin: 0.8em 0 0.2em; }
table { border-collapse: collapse; } td, th { padding: 1px 12px 1px 0; } th { text-align: left; font-weight: normal; opacity: 0.75; } td.value { font-variant-numeric: tabular-nums; }
.chart .p50 { stroke: var(--vscode-charts-blue, #3794ff); fill: var(--vscode-charts-blue, #3794ff); stroke-width: 2; }
.chart .p95 { stroke: var(--vscode-charts-orange, #d18616); fill: var(--vscode-charts-orange, #d18616); stroke-width: 2; stroke-dasharray: 5 3; }
.chart circle { stroke-dasharray: none; }
.grid { stroke: var(--vscode-editorWidget-border, #8884); stroke-width: 1; }
.axis, .label, .value, .hidden-count { fill: var(--vscode-foreground); font-size: 11px; } .hidden-count { opacity: 0.75; }
.track { fill: var(--vscode-editorWidget-border, #8883); } .bar { fill: var(--vscode-charts-green, #388a34); }
.legend span { margin-right: 14px; } .key50 { color: var(--vscode-charts-blue, #3794ff); } .key95 { color: var(--vscode-charts-orange, #d18616); }
.empty, .note { opacity: 0.75; }
`;

/** The whole page. `cspSource` is the webview's; no script runs in it. */
export function statsHtml(stats: unknown, options: { cspSource: string; when: Date; timeLabel?: (t: number) => string }): string {
  const rows = figures(stats).map(([label, value]) => `<tr><td>${escapeHtml(label)}</td><td class="value">${escapeHtml(value)}</td></tr>`).join('');
  const sections = rates(stats)
    .map((section) => `<h3>${escapeHtml(section.title)}</h3>${rateBars(section.rows)}`)
    .join('');
  const all = flattenStats(stats)
    .map((row) => `<tr><td>${escapeHtml(row.key)}</td><td class="value">${escapeHtml(row.value)}</td></tr>`)
    .join('');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${escapeHtml(options.cspSource)} 'unsafe-inline';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>lsp-infer stats</title><style>${STYLE}</style></head>
<body>
<h1>lsp-infer stats</h1>
<p class="note">Since the server started, as of ${escapeHtml(options.when.toLocaleString())}. Kept in the server's memory on this machine; never sent anywhere.</p>
<table class="figures">${rows}</table>
<h2>Latency per minute (last hour)</h2>
<p class="legend"><span class="key50">━ p50</span><span class="key95">╍ p95</span></p>
${latencyChart(latencyPoints(stats), options.timeLabel)}
<h2>Acceptance rate</h2>
${sections}
${definitionsSection(stats)}${nextEditSection(stats)}<details><summary>All counters</summary><table>${all}</table></details>
</body></html>`;
}
