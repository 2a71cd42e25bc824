import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Cancel, realSchedule, Timers } from './fakes/timers';
import {
  ANSWER_BUDGET_MS,
  announceDefinitions,
  answerBudgetMs,
  answerDefinitions,
  definitionAbove,
  definitionText,
  type DefinitionsHost,
  firstTarget,
  type LspPosition,
  MAX_CHARS,
  MAX_LINES,
  MAX_POSITIONS,
  MODULE_MAX_CHARS,
  MODULE_MAX_LINES,
  parseParams,
  textBounds,
  type TextLines,
  textLines,
} from '../src/definitions';

class FakeUri {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const range = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

const GEOMETRY = [
  'export interface Point { x: number; y: number }',
  '',
  '/** The Euclidean distance between two points. */',
  'export function distance(a: Point, b: Point): number {',
  '  return Math.hypot(a.x - b.x, a.y - b.y);',
  '}',
].join('\n');

/** A host over a table of answers by "line:character" and files by uri. */
function host(
  answers: Record<string, unknown>,
  files: Record<string, string> = { 'file:///ws/geometry.ts': GEOMETRY },
  timers = new Timers(),
): DefinitionsHost<FakeUri> & { asked: string[]; read: (uri: FakeUri) => Promise<TextLines> } {
  const asked: string[] = [];
  return {
    asked,
    find: async (uri: string, at: LspPosition) => {
      asked.push(`${uri}@${at.line}:${at.character}`);
      const found = answers[`${at.line}:${at.character}`];
      if (found instanceof Error) {
        throw found;
      }
      return typeof found === 'function' ? (found as () => unknown)() : found;
    },
    read: async (uri: FakeUri) => {
      const text = files[uri.toString()];
      if (text === undefined) {
        throw new Error(`cannot read ${uri.toString()}`);
      }
      return textLines(text);
    },
    schedule: timers.schedule,
  };
}

const PARAMS = (positions: unknown[]) => ({ textDocument: { uri: 'file:///ws/main.ts' }, positions });
const GEOMETRY_URI = new FakeUri('file:///ws/geometry.ts');

describe('lspInfer/definitions: what is taken from a definition provider\'s answer', () => {
  test('a Location: its uri and range', () => {
    const target = firstTarget([{ uri: GEOMETRY_URI, range: range(3, 16, 3, 24) }, { uri: new FakeUri('file:///other.ts'), range: range(0, 0, 0, 1) }]);
    assert.equal(target?.uri, GEOMETRY_URI, 'the first one');
    assert.deepEqual(target?.range, range(3, 16, 3, 24));
  });

  test('a LocationLink: targetUri and targetSelectionRange, else targetRange', () => {
    const link = { originSelectionRange: range(1, 0, 1, 8), targetUri: GEOMETRY_URI, targetRange: range(2, 0, 5, 1), targetSelectionRange: range(3, 16, 3, 24) };
    assert.deepEqual(firstTarget([link]), { uri: GEOMETRY_URI, range: range(3, 16, 3, 24) });
    const { targetSelectionRange: _, ...withoutSelection } = link;
    assert.deepEqual(firstTarget([withoutSelection]), { uri: GEOMETRY_URI, range: range(2, 0, 5, 1) });
  });

  test('nothing usable: undefined', () => {
    for (const answer of [undefined, null, [], [null], [{}], [{ uri: GEOMETRY_URI }], [{ uri: GEOMETRY_URI, range: range(-1, 0, 0, 0) }], [{ targetUri: GEOMETRY_URI }], 'x']) {
      assert.equal(firstTarget(answer), undefined, JSON.stringify(answer));
    }
  });

  test('a single Location (not in a list) is taken too', () => {
    assert.deepEqual(firstTarget({ uri: GEOMETRY_URI, range: range(0, 0, 0, 1) }), { uri: GEOMETRY_URI, range: range(0, 0, 0, 1) });
  });
});

describe('lspInfer/definitions: the text', () => {
  test('from the start of the range\'s first line to the end of the document', () => {
    assert.equal(definitionText(textLines(GEOMETRY), 2), GEOMETRY.split('\n').slice(2).join('\n'));
  });

  test('the lines above: at most ABOVE_LINES, fewer at the top of the file', () => {
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i}`);
    assert.equal(definitionAbove(textLines(lines.join('\n')), 20), lines.slice(10, 20).join('\n'));
    assert.equal(definitionAbove(textLines(GEOMETRY), 3), GEOMETRY.split('\n').slice(0, 3).join('\n'));
    assert.equal(definitionAbove(textLines(GEOMETRY), 0), '');
  });

  test(`at most ${MAX_LINES} lines`, () => {
    const lines = Array.from({ length: 200 }, (_, i) => `line ${i}`);
    const text = definitionText(textLines(lines.join('\n')), 10);
    assert.equal(text, lines.slice(10, 10 + MAX_LINES).join('\n'));
    assert.equal(text?.split('\n').length, 60);
  });

  test(`at most ${MAX_CHARS} characters, the last line cut`, () => {
    const lines = Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(299, 'x'));
    const text = definitionText(textLines(lines.join('\r\n')), 0);
    assert.equal(text?.length, MAX_CHARS);
    assert.ok(lines.join('\n').startsWith(text!), 'a prefix of the lines, joined with \\n');
    const one = definitionText(textLines('y'.repeat(100_000)), 0);
    assert.equal(one, 'y'.repeat(MAX_CHARS), 'one huge line');
  });

  test('a cut never splits a surrogate pair', () => {
    const text = definitionText(textLines('a' + '😀'.repeat(MAX_CHARS)), 0);
    assert.equal(text?.length, MAX_CHARS - 1);
    assert.ok(!/[\ud800-\udbff]$/.test(text!));
  });

  test('a line past the end of the document: undefined', () => {
    assert.equal(definitionText(textLines('a\nb'), 2), undefined);
    assert.equal(definitionText(textLines('a\nb'), 1), 'b');
  });

  test('lines split as VS Code splits them', () => {
    const lines = textLines('a\r\nb\nc\rd');
    assert.deepEqual(Array.from({ length: lines.lineCount }, (_, i) => lines.line(i)), ['a', 'b', 'c', 'd']);
  });
});

describe('lspInfer/definitions: the answer', () => {
  test('one entry per position, in order: a definition, or null where none was found', async () => {
    const h = host({
      '5:10': [{ uri: GEOMETRY_URI, range: range(3, 16, 3, 24) }],
      '6:2': [{ targetUri: GEOMETRY_URI, targetRange: range(0, 0, 0, 47), targetSelectionRange: range(0, 17, 0, 22) }],
      '7:0': [],
    });
    const result = await answerDefinitions(PARAMS([{ line: 5, character: 10 }, { line: 7, character: 0 }, { line: 6, character: 2 }]), h, { budgetMs: 1000 });
    assert.deepEqual(result, {
      definitions: [
        // The lines above the definition (its doc comment) come too; none at the file's top.
        { uri: 'file:///ws/geometry.ts', range: range(3, 16, 3, 24), text: GEOMETRY.split('\n').slice(3).join('\n'), above: GEOMETRY.split('\n').slice(0, 3).join('\n') },
        null,
        { uri: 'file:///ws/geometry.ts', range: range(0, 17, 0, 22), text: GEOMETRY },
      ],
    });
    assert.deepEqual(h.asked.sort(), ['file:///ws/main.ts@5:10', 'file:///ws/main.ts@6:2', 'file:///ws/main.ts@7:0']);
  });

  test(`a definition on a file's first line (a module imported whole): up to ${MODULE_MAX_LINES} lines, the others ${MAX_LINES}`, async () => {
    assert.deepEqual(textBounds(0), [MODULE_MAX_LINES, MODULE_MAX_CHARS]);
    assert.deepEqual(textBounds(1), [MAX_LINES, MAX_CHARS]);
    const module = Array.from({ length: 300 }, (_, i) => `export const c${i} = ${i};`).join('\n');
    const h = host({ '1:0': [{ uri: new FakeUri('file:///ws/consts.ts'), range: range(0, 0, 0, 0) }], '2:0': [{ uri: new FakeUri('file:///ws/consts.ts'), range: range(5, 13, 5, 15) }] }, { 'file:///ws/consts.ts': module });
    const result = await answerDefinitions(PARAMS([{ line: 1, character: 0 }, { line: 2, character: 0 }]), h, { budgetMs: 1000 });
    const [whole, one] = (result as { definitions: { text: string }[] }).definitions;
    assert.equal(whole.text, module, 'the whole module');
    assert.equal(one.text.split('\n').length, MAX_LINES);
  });

  test('a failed position is null, the others are answered: a provider error, an unreadable target, a stale range, a malformed position', async () => {
    const h = host({
      '1:1': new Error('provider failed'),
      '2:2': [{ uri: new FakeUri('file:///gone.ts'), range: range(0, 0, 0, 1) }],
      '3:3': [{ uri: GEOMETRY_URI, range: range(99, 0, 99, 1) }],
      '4:4': [{ uri: GEOMETRY_URI, range: range(3, 16, 3, 24) }],
      '5:5': () => {
        throw new Error('thrown at once');
      },
    });
    const result = await answerDefinitions(
      PARAMS([{ line: 1, character: 1 }, { line: 2, character: 2 }, { line: 3, character: 3 }, { line: 4, character: 4 }, { line: 5, character: 5 }, { line: -1, character: 0 }, 'x']),
      h,
      { budgetMs: 1000 },
    );
    assert.deepEqual(result.definitions.map((d) => d?.range.start.line ?? null), [null, null, null, 3, null, null, null]);
    assert.equal(h.asked.length, 5, 'malformed positions are not looked up');
  });

  test(`more than ${MAX_POSITIONS} positions: one entry each, the ones past it null without a lookup`, async () => {
    const h = host({ '0:0': [{ uri: GEOMETRY_URI, range: range(3, 16, 3, 24) }] });
    const positions = Array.from({ length: MAX_POSITIONS + 3 }, () => ({ line: 0, character: 0 }));
    const result = await answerDefinitions(PARAMS(positions), h, { budgetMs: 1000 });
    assert.equal(result.definitions.length, MAX_POSITIONS + 3);
    assert.equal(result.definitions.filter((d) => d !== null).length, MAX_POSITIONS);
    assert.equal(h.asked.length, MAX_POSITIONS);
  });

  test('malformed params, or no positions: an empty list, never an error', async () => {
    const h = host({});
    for (const params of [undefined, null, {}, { textDocument: {}, positions: [] }, { textDocument: { uri: 'file:///a' } }, PARAMS([])]) {
      assert.deepEqual(await answerDefinitions(params, h, { budgetMs: 1000 }), { definitions: [] }, JSON.stringify(params));
    }
    assert.deepEqual(h.asked, []);
  });

  test('the time bound: what is found by then, null for the rest; a lookup that never ends does not hold the answer', async () => {
    const timers = new Timers();
    let finishSlow: (value: unknown) => void = () => {};
    const h = host(
      {
        '1:0': [{ uri: GEOMETRY_URI, range: range(3, 16, 3, 24) }],
        '2:0': () => new Promise((resolve) => (finishSlow = resolve)),
        '3:0': () => new Promise(() => {}), // never
      },
      undefined,
      timers,
    );
    const answer = answerDefinitions(PARAMS([{ line: 1, character: 0 }, { line: 2, character: 0 }, { line: 3, character: 0 }]), h, { budgetMs: 1000 });
    let settled = false;
    void answer.then(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, 'waits while lookups run');
    assert.deepEqual(timers.pending.map((t) => t.ms), [1000]);
    timers.fire();
    const result = await answer;
    assert.deepEqual(result.definitions.map((d) => d?.uri ?? null), ['file:///ws/geometry.ts', null, null]);
    finishSlow([{ uri: GEOMETRY_URI, range: range(0, 0, 0, 1) }]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(result.definitions[1], null, 'a late lookup does not change the answer sent');
  });

  test('all positions done before the bound: answered at once, the timer cancelled', async () => {
    const timers = new Timers();
    const h = host({ '1:0': [{ uri: GEOMETRY_URI, range: range(3, 16, 3, 24) }] }, undefined, timers);
    const result = await answerDefinitions(PARAMS([{ line: 1, character: 0 }]), h, { budgetMs: 1000 });
    assert.equal(result.definitions.length, 1);
    assert.deepEqual(timers.pending, []);
  });

  test('a real timer: a lookup that never ends is answered null after the budget', async () => {
    const h: DefinitionsHost<FakeUri> = {
      find: () => new Promise(() => {}),
      read: async () => textLines(''),
      schedule: realSchedule,
    };
    const started = Date.now();
    assert.deepEqual(await answerDefinitions(PARAMS([{ line: 0, character: 0 }]), h, { budgetMs: 30 }), { definitions: [null] });
    assert.ok(Date.now() - started < 1000);
  });

  test('the server cancels: answered at once with what is there', async () => {
    const cancel = new Cancel();
    const token = cancel.token;
    const h = host({ '1:0': () => new Promise(() => {}) });
    const answer = answerDefinitions(PARAMS([{ line: 1, character: 0 }]), h, { budgetMs: 1000, token });
    await new Promise((resolve) => setImmediate(resolve));
    cancel.cancel();
    assert.deepEqual(await answer, { definitions: [null] });
    assert.equal(cancel.disposed, 1, 'the cancel listener is let go');
  });

  test('the budget: 1 s, or context.definitionsMs when that is longer', () => {
    assert.equal(answerBudgetMs(undefined), ANSWER_BUDGET_MS);
    assert.equal(answerBudgetMs(100), 1000);
    assert.equal(answerBudgetMs(5000), 5000);
    assert.equal(answerBudgetMs('x'), 1000);
  });
});

describe('lspInfer/definitions: the capability', () => {
  test('experimental.lspInfer.definitions = true, beside what is there', () => {
    const capabilities: { experimental?: unknown } = { experimental: { other: 1, lspInfer: { something: 'else' } } };
    announceDefinitions(capabilities);
    assert.deepEqual(capabilities.experimental, { other: 1, lspInfer: { something: 'else', definitions: true } });
    const empty: { experimental?: unknown } = {};
    announceDefinitions(empty);
    assert.deepEqual(empty, { experimental: { lspInfer: { definitions: true } } });
  });

  test('params: the document and each position', () => {
    assert.deepEqual(parseParams(PARAMS([{ line: 1, character: 2 }, { line: 1.5, character: 0 }])), {
      uri: 'file:///ws/main.ts',
      positions: [{ line: 1, character: 2 }, null],
    });
  });
});
