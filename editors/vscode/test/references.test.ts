import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Cancel, realSchedule, Timers } from './fakes/timers';
import { Uri } from './fakes/vscode';
import type { LspPosition } from '../src/definitions';
import {
  announceReferences,
  answerReferences,
  fromUtf16,
  parseReferencesParams,
  type PositionEncoding,
  positionEncoding,
  REFERENCES_BUDGET_MS,
  type ReferencesHost,
  sameDocumentRanges,
  toUtf16,
} from '../src/references';

const range = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });
const URI = 'file:///ws/shapes.go';
const HERE = Uri.file('/ws/shapes.go');
const OTHER = Uri.file('/ws/other.go');
const at = (uri: Uri, r: ReturnType<typeof range>) => ({ uri, range: r });
const PARAMS = (version = 12, position: LspPosition = { line: 1, character: 4 }) => ({ textDocument: { uri: URI, version }, position });

/** An open document (text and version changeable), read through getText (counted). */
class Doc {
  reads = 0;
  constructor(
    public text: string,
    public version = 12,
  ) {}
  getText(): string {
    this.reads += 1;
    return this.text;
  }
}

/** A host over one open document and a reference provider's answer (a value, an Error, or a function). */
function host(
  doc: Doc | undefined,
  answer: unknown,
  timers = new Timers(),
): ReferencesHost & { asked: { uri: string; position: LspPosition; version: number | undefined }[]; timers: Timers } {
  const asked: { uri: string; position: LspPosition; version: number | undefined }[] = [];
  return {
    asked,
    timers,
    document: (uri) => (uri === URI ? doc : undefined),
    find: async (uri, position) => {
      asked.push({ uri, position, version: doc?.version });
      if (answer instanceof Error) {
        throw answer;
      }
      return typeof answer === 'function' ? (answer as () => unknown)() : answer;
    },
    schedule: timers.schedule,
  };
}

const UTF16 = { encoding: 'utf-16' as PositionEncoding, budgetMs: REFERENCES_BUDGET_MS };
const TEXT = 'package shapes\nfunc area(w, h int) int {\n\treturn w * h\n}\n';

describe('lspInfer/references: position encodings', () => {
  test('the negotiated encoding: utf-8 and utf-32 as named, utf-16 otherwise', () => {
    assert.equal(positionEncoding('utf-8'), 'utf-8');
    assert.equal(positionEncoding('utf-32'), 'utf-32');
    assert.equal(positionEncoding('utf-16'), 'utf-16');
    assert.equal(positionEncoding(undefined), 'utf-16');
    assert.equal(positionEncoding('latin-1'), 'utf-16');
  });

  // 'größe' after a 4-byte emoji: UTF-16 columns vs UTF-8 bytes vs code points.
  const LINE = 'print("😀", größe)';
  test('UTF-16 → UTF-8 / UTF-32, at characters of 1 to 4 bytes', () => {
    assert.equal(fromUtf16(LINE, 7, 'utf-8'), 7, 'ASCII before the emoji');
    assert.equal(fromUtf16(LINE, 9, 'utf-8'), 11, 'after the emoji: 2 UTF-16 units, 4 bytes');
    assert.equal(fromUtf16(LINE, 12, 'utf-8'), 14, 'the start of größe');
    assert.equal(fromUtf16(LINE, 17, 'utf-8'), 21, 'its end: ö and ß are 2 bytes each');
    assert.equal(fromUtf16(LINE, 12, 'utf-32'), 11);
    assert.equal(fromUtf16(LINE, 17, 'utf-32'), 16);
    assert.equal(fromUtf16(LINE, 12, 'utf-16'), 12);
    assert.equal(fromUtf16('名前 = 1', 2, 'utf-8'), 6, 'a CJK character: 3 bytes');
  });

  test('UTF-8 / UTF-32 → UTF-16, the inverse', () => {
    assert.equal(toUtf16(LINE, 14, 'utf-8'), 12);
    assert.equal(toUtf16(LINE, 16, 'utf-8'), 14, 'after g, r: at ö');
    assert.equal(toUtf16(LINE, 21, 'utf-8'), 17);
    assert.equal(toUtf16(LINE, 11, 'utf-32'), 12);
    assert.equal(toUtf16(LINE, 16, 'utf-32'), 17);
    assert.equal(toUtf16('名前 = 1', 6, 'utf-8'), 2);
  });

  test('past the end of the line: its end; inside a character: its start', () => {
    assert.equal(toUtf16(LINE, 99, 'utf-8'), LINE.length);
    assert.equal(fromUtf16(LINE, 99, 'utf-8'), Buffer.byteLength(LINE, 'utf8'));
    assert.equal(toUtf16(LINE, 9, 'utf-8'), 7, 'byte 9 is inside the emoji (bytes 7–10)');
    assert.equal(fromUtf16(LINE, 8, 'utf-8'), 7, 'between the two halves of the surrogate pair');
  });
});

describe('lspInfer/references: the params', () => {
  test('the document, its version and the position', () => {
    assert.deepEqual(parseReferencesParams(PARAMS(12, { line: 8, character: 14 })), { uri: URI, version: 12, position: { line: 8, character: 14 } });
  });

  test('malformed: undefined', () => {
    for (const params of [
      undefined,
      null,
      {},
      { textDocument: { uri: URI }, position: { line: 0, character: 0 } },
      { textDocument: { uri: URI, version: 1.5 }, position: { line: 0, character: 0 } },
      { textDocument: { uri: 1, version: 1 }, position: { line: 0, character: 0 } },
      { textDocument: { uri: URI, version: 1 }, position: { line: -1, character: 0 } },
      { textDocument: { uri: URI, version: 1 } },
    ]) {
      assert.equal(parseReferencesParams(params), undefined, JSON.stringify(params));
    }
  });
});

describe('lspInfer/references: what is kept of the providers\' answer', () => {
  test('this document\'s Locations only, deduplicated, sorted by start then end', () => {
    const found = [
      at(HERE, range(2, 13, 2, 14)),
      at(OTHER, range(0, 0, 0, 1)),
      at(HERE, range(1, 10, 1, 11)),
      at(HERE, range(2, 9, 2, 10)),
      at(HERE, range(1, 10, 1, 11)), // the same place from a second language server
      at(HERE, range(2, 9, 2, 12)),
      { targetUri: HERE, targetRange: range(0, 0, 0, 1) }, // a LocationLink: not what references give
      at(HERE, range(3, 5, 3, 1)), // reversed
      at(HERE, range(-1, 0, 0, 0)),
      null,
      { range: range(0, 0, 0, 1) },
    ];
    assert.deepEqual(sameDocumentRanges(found, URI, 'utf-16'), [range(1, 10, 1, 11), range(2, 9, 2, 10), range(2, 9, 2, 12), range(2, 13, 2, 14)]);
  });

  test('uris are compared as strings: a uri string works as well as a Uri', () => {
    assert.deepEqual(sameDocumentRanges([{ uri: URI, range: range(0, 1, 0, 2) }], URI, 'utf-16'), [range(0, 1, 0, 2)]);
    assert.deepEqual(sameDocumentRanges([{ uri: 'file:///ws/Shapes.go', range: range(0, 1, 0, 2) }], URI, 'utf-16'), []);
  });

  test('nothing usable: an empty list', () => {
    for (const found of [undefined, null, 'x', {}, [at(OTHER, range(0, 0, 0, 1))]]) {
      assert.deepEqual(sameDocumentRanges(found, URI, 'utf-16'), [], JSON.stringify(found));
    }
  });
});

describe('lspInfer/references: the answer', () => {
  test('asks at the position for the document at its version, and answers its ranges in it', async () => {
    const h = host(new Doc(TEXT), [at(HERE, range(2, 13, 2, 14)), at(OTHER, range(5, 0, 5, 1)), at(HERE, range(1, 13, 1, 14)), at(HERE, range(2, 13, 2, 14))]);
    const answer = await answerReferences(PARAMS(12, { line: 1, character: 13 }), h, UTF16);
    assert.deepEqual(answer, { result: { references: [range(1, 13, 1, 14), range(2, 13, 2, 14)] }, outcome: 'found' });
    assert.deepEqual(h.asked, [{ uri: URI, position: { line: 1, character: 13 }, version: 12 }]);
    assert.deepEqual(h.timers.pending, [], 'the timer is let go once answered');
  });

  test('the document at another version: null, and the providers are not asked', async () => {
    const h = host(new Doc(TEXT, 13), [at(HERE, range(1, 13, 1, 14))]);
    assert.deepEqual(await answerReferences(PARAMS(12), h, UTF16), { result: null, outcome: 'stale' });
    assert.deepEqual(h.asked, []);
  });

  test('the document not open: null, not asked', async () => {
    const h = host(undefined, [at(HERE, range(1, 13, 1, 14))]);
    assert.deepEqual(await answerReferences(PARAMS(12), h, UTF16), { result: null, outcome: 'not open' });
    assert.deepEqual(h.asked, []);
  });

  test('malformed params: null, not asked', async () => {
    const h = host(new Doc(TEXT), []);
    assert.deepEqual(await answerReferences({ textDocument: { uri: URI }, position: { line: 0, character: 0 } }, h, UTF16), { result: null, outcome: 'malformed' });
    assert.deepEqual(h.asked, []);
  });

  test('the providers fail (rejected, or thrown at once): null', async () => {
    assert.deepEqual(await answerReferences(PARAMS(), host(new Doc(TEXT), new Error('no provider')), UTF16), { result: null, outcome: 'failed' });
    const throwing: ReferencesHost = {
      document: () => new Doc(TEXT),
      find: () => {
        throw new Error('thrown before a promise');
      },
      schedule: new Timers().schedule,
    };
    assert.deepEqual(await answerReferences(PARAMS(), throwing, UTF16), { result: null, outcome: 'failed' });
    const brokenDocument: ReferencesHost = { ...throwing, document: () => { throw new Error('no workspace'); } };
    assert.deepEqual(await answerReferences(PARAMS(), brokenDocument, UTF16), { result: null, outcome: 'failed' });
  });

  test('nothing found, or nothing in this document: null (not an empty list)', async () => {
    for (const found of [undefined, [], [at(OTHER, range(1, 0, 1, 4))]]) {
      assert.deepEqual(await answerReferences(PARAMS(), host(new Doc(TEXT), found), UTF16), { result: null, outcome: 'none' }, JSON.stringify(found));
    }
  });

  test(`bounded: null after the budget (${REFERENCES_BUDGET_MS} ms); a late answer changes nothing`, async () => {
    let finish: (value: unknown) => void = () => {};
    const h = host(new Doc(TEXT), () => new Promise((resolve) => (finish = resolve)));
    const answer = answerReferences(PARAMS(), h, UTF16);
    let settled = false;
    void answer.then(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, 'waits while the providers work');
    assert.deepEqual(h.timers.pending.map((t) => t.ms), [4000]);
    h.timers.fire();
    assert.deepEqual(await answer, { result: null, outcome: 'timed out' });
    finish([at(HERE, range(1, 10, 1, 11))]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(await answer, { result: null, outcome: 'timed out' });
  });

  test('a real timer: a provider that never answers gets null after the budget', async () => {
    const never: ReferencesHost = {
      document: () => new Doc(TEXT),
      find: () => new Promise(() => {}),
      schedule: realSchedule,
    };
    const started = Date.now();
    assert.deepEqual(await answerReferences(PARAMS(), never, { encoding: 'utf-16', budgetMs: 30 }), { result: null, outcome: 'timed out' });
    assert.ok(Date.now() - started < 1000);
  });

  test('the server cancels: null at once, the listener and the timer let go', async () => {
    const cancel = new Cancel();
    const token = cancel.token;
    const h = host(new Doc(TEXT), () => new Promise(() => {}));
    const answer = answerReferences(PARAMS(), h, { ...UTF16, token });
    await new Promise((resolve) => setImmediate(resolve));
    cancel.cancel();
    assert.deepEqual(await answer, { result: null, outcome: 'cancelled' });
    assert.equal(cancel.disposed, 1);
    assert.deepEqual(h.timers.pending, []);
  });
});

describe('lspInfer/references: non-ASCII text, in the negotiated encoding', () => {
  // `größe` on line 0 (after `var `) and line 1 (after an emoji and a CJK name).
  const TEXT8 = 'var größe = 1\nprint("😀", 名前, größe)\n';
  // As VS Code's providers give them: UTF-16.
  const FOUND = [at(HERE, range(1, 16, 1, 21)), at(HERE, range(0, 4, 0, 9))];

  test('utf-8: the position asked is turned into UTF-16, the ranges into bytes', async () => {
    const h = host(new Doc(TEXT8), FOUND);
    // größe starts at byte 22 of line 1: `print("` 7 + 😀 4 + `", ` 3 + 名前 6 + `, ` 2.
    const answer = await answerReferences(PARAMS(12, { line: 1, character: 24 }), h, { encoding: 'utf-8', budgetMs: 1000 });
    assert.deepEqual(h.asked[0].position, { line: 1, character: 18 }, 'byte 24 (at ö) is UTF-16 column 18');
    assert.deepEqual(answer, { result: { references: [range(0, 4, 0, 11), range(1, 22, 1, 29)] }, outcome: 'found' });
  });

  test('utf-32: code points', async () => {
    const answer = await answerReferences(PARAMS(12, { line: 1, character: 16 }), host(new Doc(TEXT8), FOUND), { encoding: 'utf-32', budgetMs: 1000 });
    assert.deepEqual(answer.result, { references: [range(0, 4, 0, 9), range(1, 15, 1, 20)] });
  });

  test('utf-16: positions and ranges go through as they are, the text is never read', async () => {
    const doc = new Doc(TEXT8);
    const h = host(doc, FOUND);
    const answer = await answerReferences(PARAMS(12, { line: 1, character: 18 }), h, UTF16);
    assert.deepEqual(h.asked[0].position, { line: 1, character: 18 });
    assert.deepEqual(answer.result, { references: [range(0, 4, 0, 9), range(1, 16, 1, 21)] });
    assert.equal(doc.reads, 0);
  });

  test('utf-8: the ranges are converted with the text at the version asked, though it is edited meanwhile', async () => {
    const doc = new Doc(TEXT8);
    let finish: (value: unknown) => void = () => {};
    const h = host(doc, () => new Promise((resolve) => (finish = resolve)));
    const answer = answerReferences(PARAMS(12, { line: 0, character: 4 }), h, { encoding: 'utf-8', budgetMs: 1000 });
    await new Promise((resolve) => setImmediate(resolve));
    doc.text = 'var size = 1\nprint(size)\n'; // the user renames while the providers work
    doc.version = 13;
    finish(FOUND);
    assert.deepEqual((await answer).result, { references: [range(0, 4, 0, 11), range(1, 22, 1, 29)] });
    assert.equal(doc.reads, 1, 'read once, when asked');
  });

  test('utf-8: a range on a line the document does not have is left out; a position past its end is null', async () => {
    const found = [...FOUND, at(HERE, range(9, 0, 9, 3))];
    assert.deepEqual((await answerReferences(PARAMS(12, { line: 0, character: 4 }), host(new Doc(TEXT8), found), { encoding: 'utf-8', budgetMs: 1000 })).result, {
      references: [range(0, 4, 0, 11), range(1, 22, 1, 29)],
    });
    const h = host(new Doc(TEXT8), FOUND);
    assert.deepEqual(await answerReferences(PARAMS(12, { line: 7, character: 0 }), h, { encoding: 'utf-8', budgetMs: 1000 }), { result: null, outcome: 'malformed' });
    assert.deepEqual(h.asked, []);
  });
});

describe('lspInfer/references: the capability', () => {
  test('experimental.lspInfer.references = true, beside what is there', () => {
    const capabilities: { experimental?: unknown } = { experimental: { other: 1, lspInfer: { definitions: true } } };
    announceReferences(capabilities);
    assert.deepEqual(capabilities.experimental, { other: 1, lspInfer: { definitions: true, references: true } });
    const empty: { experimental?: unknown } = {};
    announceReferences(empty);
    assert.deepEqual(empty, { experimental: { lspInfer: { references: true } } });
  });
});
