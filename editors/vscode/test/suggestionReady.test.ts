import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Timers } from './fakes/timers';
import {
  announceSuggestionReady,
  cursorRestsAt,
  type EditorView,
  parseSuggestionReady,
  PendingReAsk,
  type Place,
  RE_ASK_WINDOW_MS,
} from '../src/suggestionReady';

const URI = 'file:///ws/app.py';
const at = (line: number, character: number) => ({ line, character });
const READY: Place = { uri: URI, version: 7, position: at(12, 8) };
/** The active editor: one empty cursor at `active` unless `anchor` says otherwise. */
const editor = (active = at(12, 8), more: Partial<EditorView> = {}, anchor = active): EditorView => ({
  uri: URI,
  version: 7,
  selections: [{ anchor, active }],
  ...more,
});

describe('the notification', () => {
  test('its params: the document, its version and the position', () => {
    const params = { textDocument: { uri: URI, version: 7 }, position: { line: 12, character: 8 } };
    assert.deepEqual(parseSuggestionReady(params), READY);
  });

  test('malformed params are undefined, never an exception', () => {
    for (const params of [
      undefined,
      null,
      'file:///ws/app.py',
      [],
      {},
      { textDocument: { uri: URI, version: 7 } },
      { position: { line: 1, character: 0 } },
      { textDocument: { uri: URI }, position: { line: 1, character: 0 } },
      { textDocument: { version: 7 }, position: { line: 1, character: 0 } },
      { textDocument: { uri: 42, version: 7 }, position: { line: 1, character: 0 } },
      { textDocument: { uri: URI, version: '7' }, position: { line: 1, character: 0 } },
      { textDocument: { uri: URI, version: 7.5 }, position: { line: 1, character: 0 } },
      { textDocument: { uri: URI, version: 7 }, position: { line: -1, character: 0 } },
      { textDocument: { uri: URI, version: 7 }, position: { line: 1, character: '0' } },
      { textDocument: { uri: URI, version: 7 }, position: { line: 1 } },
      { textDocument: { uri: URI, version: 7 }, position: [1, 0] },
      { textDocument: null, position: { line: 1, character: 0 } },
    ]) {
      assert.equal(parseSuggestionReady(params), undefined, JSON.stringify(params));
    }
  });

  test('announced beside the other experimental capabilities, ours included', () => {
    const capabilities: { experimental?: unknown } = { experimental: { other: 1, lspInfer: { definitions: true } } };
    announceSuggestionReady(capabilities);
    assert.deepEqual(capabilities.experimental, { other: 1, lspInfer: { definitions: true, suggestionReady: true } });
    const bare: { experimental?: unknown } = {};
    announceSuggestionReady(bare);
    assert.deepEqual(bare.experimental, { lspInfer: { suggestionReady: true } });
  });
});

describe('whether the user is still there', () => {
  test('the document, at that version, one empty cursor at that position', () => {
    assert.equal(cursorRestsAt(READY, editor()), true);
  });

  test('another document, another version, a moved cursor, a selection, more cursors, no editor: no', () => {
    assert.equal(cursorRestsAt(READY, editor(at(12, 8), { uri: 'file:///ws/other.py' })), false, 'another document');
    assert.equal(cursorRestsAt(READY, editor(at(12, 8), { version: 8 })), false, 'edited since');
    assert.equal(cursorRestsAt(READY, editor(at(12, 7))), false, 'the cursor moved');
    assert.equal(cursorRestsAt(READY, editor(at(13, 8))), false, 'another line');
    assert.equal(cursorRestsAt(READY, editor(at(12, 8), {}, at(12, 0))), false, 'a selection ending there');
    const two = editor(at(12, 8), { selections: [{ anchor: at(12, 8), active: at(12, 8) }, { anchor: at(3, 0), active: at(3, 0) }] });
    assert.equal(cursorRestsAt(READY, two), false, 'more cursors');
    assert.equal(cursorRestsAt(READY, editor(at(12, 8), { selections: [] })), false, 'no selection');
    assert.equal(cursorRestsAt(READY, undefined), false, 'no editor');
  });
});

describe('the pending re-ask', () => {
  test('the next request, at its place, is the re-ask, once', () => {
    const reAsk = new PendingReAsk(new Timers().schedule);
    assert.equal(reAsk.take(READY), false, 'nothing pending: as it came');
    reAsk.expect(READY);
    assert.equal(reAsk.take({ ...READY, position: at(12, 8) }), true);
    assert.equal(reAsk.take(READY), false, "a later Alt+] at the same place is the user's");
  });

  test('a request elsewhere (another document, version or position) is not, and takes it', () => {
    const reAsk = new PendingReAsk(new Timers().schedule);
    for (const elsewhere of [{ ...READY, version: 8 }, { ...READY, uri: 'file:///ws/other.py' }, { ...READY, position: at(12, 9) }]) {
      reAsk.expect(READY);
      assert.equal(reAsk.take(elsewhere), false, JSON.stringify(elsewhere));
      assert.equal(reAsk.take(READY), false, 'the user moved on: dropped');
    }
  });

  test(`dropped after ${RE_ASK_WINDOW_MS} ms, or when cleared; a new one replaces the old`, () => {
    const timers = new Timers();
    const reAsk = new PendingReAsk(timers.schedule);
    reAsk.expect(READY);
    assert.deepEqual(timers.pending.map((t) => t.ms), [RE_ASK_WINDOW_MS]);
    assert.ok(RE_ASK_WINDOW_MS >= 500 && RE_ASK_WINDOW_MS <= 5000);
    timers.pending.splice(0).forEach((t) => t.run());
    assert.equal(reAsk.take(READY), false, 'expired');
    reAsk.expect(READY);
    reAsk.clear();
    assert.equal(timers.pending.length, 0, 'its timer is cancelled');
    assert.equal(reAsk.take(READY), false, 'cleared');
    reAsk.expect(READY);
    const later = { ...READY, version: 9 };
    reAsk.expect(later);
    assert.equal(timers.pending.length, 1, 'one timer');
    assert.equal(reAsk.take(later), true);
    assert.equal(timers.pending.length, 0, 'taken: its timer is cancelled');
  });
});
