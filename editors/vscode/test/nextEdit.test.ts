import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DID_ACCEPT_NEXT_EDIT,
  DID_REJECT_NEXT_EDIT,
  DID_SHOW_NEXT_EDIT,
  drawing,
  type EditorLayout,
  fits,
  ghostText,
  hintText,
  MAX_GHOST_CHARS,
  type NextEdit,
  nextEditParams,
  NextEditTracker,
  parseNextEdit,
  tabAction,
} from '../src/nextEdit';

const URI = 'file:///ws/shapes.py';
const at = (line: number, character: number) => ({ line, character });
const range = (sl: number, sc: number, el: number, ec: number) => ({ start: at(sl, sc), end: at(el, ec) });

/** The answer docs/protocol.md gives as its example: a rename carried to two more uses. */
const ANSWER = {
  edits: [
    { range: range(5, 11, 5, 16), text: 'width' },
    { range: range(6, 15, 6, 20), text: 'width' },
  ],
  id: 'ne-3',
  kind: 'rename',
  version: 7,
  label: 'rename wdth → width (2 more)',
};
const SUGGESTION: NextEdit = { uri: URI, version: 7, id: 'ne-3', kind: 'rename', label: 'rename wdth → width (2 more)', edits: ANSWER.edits };
/** The cursor on line 1, lines 0-40 on screen. */
const LAYOUT: EditorLayout = { cursor: at(1, 14), visibleLines: [{ start: 0, end: 40 }] };

describe('the request and its answer', () => {
  test('params: the document with its version, and the cursor', () => {
    assert.deepEqual(nextEditParams(URI, 7, at(3, 17)), { textDocument: { uri: URI, version: 7 }, position: { line: 3, character: 17 } });
  });

  test('an answer becomes the suggestion for the document asked about', () => {
    assert.deepEqual(parseNextEdit(ANSWER, URI), SUGGESTION);
    const bare = parseNextEdit({ ...ANSWER, kind: null, label: '' }, URI);
    assert.equal(bare?.kind, null);
    assert.equal(bare?.label, null);
  });

  test('no suggestion: an empty group, and anything malformed, never an exception', () => {
    const empty = { edits: [], id: null, kind: null, version: 7, label: null };
    const edit = (r: unknown, text: unknown = 'x') => ({ ...ANSWER, edits: [{ range: r, text }] });
    for (const answer of [
      undefined,
      null,
      'ne-3',
      [],
      empty,
      { ...ANSWER, edits: 'x' },
      { ...ANSWER, id: undefined },
      { ...ANSWER, id: '' },
      { ...ANSWER, id: 3 },
      { ...ANSWER, version: '7' },
      { ...ANSWER, version: 7.5 },
      edit(range(1, 0, 1, 2), 42),
      edit(range(1, 5, 1, 2)), // end before start
      edit(range(2, 0, 1, 0)),
      edit({ start: at(1, 0) }),
      edit({ start: at(-1, 0), end: at(1, 0) }),
      edit({ start: at(1, 0), end: { line: 1 } }),
      // out of order, and overlapping: a group that cannot be applied as it is
      { ...ANSWER, edits: [ANSWER.edits[1], ANSWER.edits[0]] },
      { ...ANSWER, edits: [{ range: range(5, 11, 5, 16), text: 'a' }, { range: range(5, 15, 5, 18), text: 'b' }] },
    ]) {
      assert.equal(parseNextEdit(answer, URI), undefined, JSON.stringify(answer));
    }
  });

  test('edits that touch (one ends where the next starts) are a valid group', () => {
    const touching = { ...ANSWER, edits: [{ range: range(5, 11, 5, 16), text: 'a' }, { range: range(5, 16, 5, 16), text: 'b' }] };
    assert.equal(parseNextEdit(touching, URI)?.edits.length, 2);
  });

  test('drawn only while the document is still at the version asked about', () => {
    const asked = { uri: URI, version: 7 };
    assert.equal(fits(SUGGESTION, asked, { uri: URI, version: 7 }), true);
    assert.equal(fits(SUGGESTION, asked, { uri: URI, version: 8 }), false, 'typed on since');
    assert.equal(fits(SUGGESTION, asked, { uri: 'file:///ws/other.py', version: 7 }), false, 'another document in front');
    assert.equal(fits(SUGGESTION, asked, undefined), false, 'no editor');
    assert.equal(fits({ ...SUGGESTION, version: 6 }, asked, { uri: URI, version: 7 }), false, 'an answer for another version');
  });
});

describe('what is drawn', () => {
  test('a rename: each old name struck through, the new one as ghost text after it; no hint when on screen', () => {
    assert.deepEqual(drawing(SUGGESTION, LAYOUT), {
      removed: [range(5, 11, 5, 16), range(6, 15, 6, 20)],
      inserted: [
        { at: at(5, 16), text: 'width' },
        { at: at(6, 20), text: 'width' },
      ],
    });
  });

  test('an insertion strikes nothing through; a deletion shows no ghost text', () => {
    const insert = { ...SUGGESTION, edits: [{ range: range(2, 4, 2, 4), text: 'self.' }] };
    assert.deepEqual(drawing(insert, LAYOUT), { removed: [], inserted: [{ at: at(2, 4), text: 'self.' }] });
    const remove = { ...SUGGESTION, edits: [{ range: range(2, 4, 3, 0), text: '' }] };
    assert.deepEqual(drawing(remove, LAYOUT), { removed: [range(2, 4, 3, 0)], inserted: [] });
  });

  test('the first edit off screen: a hint at the end of the cursor\'s line with the label and where to go', () => {
    const far = { ...SUGGESTION, edits: [{ range: range(120, 4, 120, 8), text: 'width' }] };
    const shown = drawing(far, LAYOUT);
    assert.deepEqual(shown.hint, { line: 1, text: 'rename wdth → width (2 more) — line 121, Tab to go' });
    assert.deepEqual(drawing(far, { cursor: at(130, 0), visibleLines: [{ start: 100, end: 140 }] }).hint, undefined);
    // Folded regions: visibleRanges has several ranges, and a line between them is off screen.
    const folded: EditorLayout = { cursor: at(1, 0), visibleLines: [{ start: 0, end: 10 }, { start: 119, end: 150 }] };
    assert.equal(drawing(far, folded).hint, undefined);
    assert.ok(drawing({ ...far, edits: [{ range: range(50, 0, 50, 1), text: 'x' }] }, folded).hint);
    assert.equal(hintText({ ...far, label: null }), 'next edit — line 121, Tab to go');
  });

  test('ghost text is one line: line breaks shown as ⏎, a long text cut', () => {
    assert.equal(ghostText('a\nb\r\nc'), 'a⏎b⏎c');
    const long = 'x'.repeat(MAX_GHOST_CHARS + 10);
    assert.equal([...ghostText(long)].length, MAX_GHOST_CHARS);
    assert.ok(ghostText(long).endsWith('…'));
    assert.equal(ghostText('x'.repeat(MAX_GHOST_CHARS)), 'x'.repeat(MAX_GHOST_CHARS));
  });
});

describe('Tab', () => {
  test('jumps to the first edit when the cursor is not on its line, applies when it is', () => {
    assert.equal(tabAction(SUGGESTION, at(1, 14)), 'jump', 'renamed on line 1, the next use on line 5');
    assert.equal(tabAction(SUGGESTION, at(5, 11)), 'apply', 'after the jump');
    assert.equal(tabAction(SUGGESTION, at(5, 0)), 'apply', 'anywhere on that line');
    assert.equal(tabAction(SUGGESTION, at(6, 15)), 'jump', 'on a later edit of the group: to the first one');
    const multiLine = { ...SUGGESTION, edits: [{ range: range(3, 2, 5, 0), text: '' }] };
    assert.equal(tabAction(multiLine, at(4, 0)), 'apply');
    assert.equal(tabAction(multiLine, at(6, 0)), 'jump');
  });
});

describe('what the server is told', () => {
  const show = (id: string) => ({ method: DID_SHOW_NEXT_EDIT, params: { id } });
  const reject = (id: string) => ({ method: DID_REJECT_NEXT_EDIT, params: { id } });
  const other: NextEdit = { ...SUGGESTION, id: 'ne-4' };

  test('shown once, however often it is drawn; a new suggestion rejects the one before', () => {
    const tracker = new NextEditTracker();
    assert.deepEqual(tracker.show(SUGGESTION), [show('ne-3')]);
    assert.deepEqual(tracker.show(SUGGESTION), [], 'redrawn: not shown again');
    assert.deepEqual(tracker.show(other), [reject('ne-3'), show('ne-4')]);
    assert.equal(tracker.current, other);
  });

  test('an edit of its document (another version) rejects it; of another document, or at its version, not', () => {
    const tracker = new NextEditTracker();
    tracker.show(SUGGESTION);
    assert.deepEqual(tracker.edited({ uri: 'file:///ws/other.py', version: 8 }), []);
    assert.deepEqual(tracker.edited({ uri: URI, version: 7 }), []);
    assert.deepEqual(tracker.edited({ uri: URI, version: 8 }), [reject('ne-3')]);
    assert.equal(tracker.current, undefined);
    assert.deepEqual(tracker.edited({ uri: URI, version: 9 }), [], 'once');
  });

  test('Esc, another editor, a closed document: rejected once', () => {
    const tracker = new NextEditTracker();
    tracker.show(SUGGESTION);
    assert.deepEqual(tracker.left('file:///ws/other.py'), []);
    assert.deepEqual(tracker.left(URI), [reject('ne-3')]);
    tracker.show(other);
    assert.deepEqual(tracker.reject(), [reject('ne-4')]);
    assert.deepEqual(tracker.reject(), []);
  });

  test('taken to be applied: off the tracker, so that its own edit does not reject it', () => {
    const tracker = new NextEditTracker();
    tracker.show(SUGGESTION);
    assert.equal(tracker.take(), SUGGESTION);
    assert.deepEqual(tracker.edited({ uri: URI, version: 8 }), []);
    assert.equal(tracker.take(), undefined);
  });

  test('a new server: forgotten without a word (its ids mean nothing there)', () => {
    const tracker = new NextEditTracker();
    tracker.show(SUGGESTION);
    tracker.reset();
    assert.equal(tracker.current, undefined);
    assert.deepEqual(tracker.reject(), []);
    assert.deepEqual(tracker.show(SUGGESTION), [show('ne-3')]);
    assert.equal(DID_ACCEPT_NEXT_EDIT, 'lspInfer/didAcceptNextEdit');
  });
});
