import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { characters, DID_DISMISS, DID_PARTIALLY_ACCEPT, DID_SHOW, type LifecycleMessage, type Offered, SuggestionTracker, suggestionId } from '../src/lifecycle';

const A = 'file:///w/a.py';
const B = 'file:///w/b.py';
const item = (id: string, text = 'a + b', start = 26): Offered => ({ id, text, start });
const shown = (id: string): LifecycleMessage => ({ method: DID_SHOW, params: { id } });
const dismissed = (id: string): LifecycleMessage => ({ method: DID_DISMISS, params: { id } });
const partly = (id: string, acceptedLength: number): LifecycleMessage => ({ method: DID_PARTIALLY_ACCEPT, params: { id, acceptedLength } });

describe('suggestion ids', () => {
  test('only from the server\'s accept command with one {id} argument', () => {
    assert.equal(suggestionId({ command: 'lspInfer.acceptSuggestion', arguments: [{ id: 's7' }] }), 's7');
    assert.equal(suggestionId({ command: 'lspInfer.acceptSuggestion', arguments: [{ id: '' }] }), undefined);
    assert.equal(suggestionId({ command: 'lspInfer.acceptSuggestion', arguments: [] }), undefined);
    assert.equal(suggestionId({ command: 'lspInfer.acceptSuggestion', arguments: [null] }), undefined);
    assert.equal(suggestionId({ command: 'other', arguments: [{ id: 's7' }] }), undefined);
    assert.equal(suggestionId(undefined), undefined);
  });

  test('characters are code points, as the server counts them', () => {
    assert.equal(characters('a😀b'), 3);
    assert.equal('a😀b'.length, 4);
  });
});

describe('the tracker', () => {
  // [what happens, the messages it sends]
  type Step = [(t: SuggestionTracker) => LifecycleMessage[], LifecycleMessage[]];
  const cases: Record<string, Step[]> = {
    'an answer: its first item is shown, once': [
      [(t) => t.answered(A, [item('s1'), item('s2', 'b + a')]), [shown('s1')]],
      [(t) => t.answered(A, [item('s1'), item('s2', 'b + a')]), []], // asked again (Alt+])
    ],
    'accepted with Tab: the command ends it, nothing else is sent': [
      [(t) => t.answered(A, [item('s1')]), [shown('s1')]],
      [(t) => t.accepted('s1'), []],
      [(t) => t.answered(A, []), []], // nothing on screen any more to dismiss
    ],
    'another choice accepted: the first one shown was dismissed': [
      [(t) => t.answered(A, [item('s1'), item('s2', 'b + a')]), [shown('s1')]],
      [(t) => t.accepted('s2'), [dismissed('s1')]],
    ],
    'a new answer offers something else: shown first, then the old one dismissed': [
      [(t) => t.answered(A, [item('s1')]), [shown('s1')]],
      [(t) => t.answered(A, [item('s2', '+ b', 28)]), [shown('s2'), dismissed('s1')]],
    ],
    'an empty answer: the shown one is dismissed': [
      [(t) => t.answered(A, [item('s1')]), [shown('s1')]],
      [(t) => t.answered(A, []), [dismissed('s1')]],
      [(t) => t.answered(A, []), []],
    ],
    'documents are separate': [
      [(t) => t.answered(A, [item('s1')]), [shown('s1')]],
      [(t) => t.answered(B, [item('s2')]), [shown('s2')]],
      [(t) => t.left(A), [dismissed('s1')]],
      [(t) => t.left(A), []],
    ],
    'another editor active: the others are dismissed': [
      [(t) => t.answered(A, [item('s1')]), [shown('s1')]],
      [(t) => t.answered(B, [item('s2')]), [shown('s2')]],
      [(t) => t.focused(B), [dismissed('s1')]],
      [(t) => t.focused(undefined), [dismissed('s2')]],
    ],
    'an accept command for an unknown item changes nothing': [
      [(t) => t.answered(A, [item('s1')]), [shown('s1')]],
      [(t) => t.accepted('s9'), []],
      [(t) => t.left(A), [dismissed('s1')]],
    ],
  };
  for (const [name, steps] of Object.entries(cases)) {
    test(name, () => {
      const tracker = new SuggestionTracker();
      steps.forEach(([act, expected], i) => assert.deepEqual(act(tracker), expected, `step ${i + 1}`));
    });
  }

  test('partial accepts: how much of the item is in the document, from its start', () => {
    const tracker = new SuggestionTracker();
    const document = 'def add(a, b):\n    return ';
    tracker.answered(A, [item('s1', 'a + b', document.length)]);
    let text = document;
    const upToCursor = (start: number) => text.slice(start);
    text = document + 'a';
    assert.deepEqual(tracker.partlyAccepted(A, upToCursor), [partly('s1', 1)]);
    text = document + 'a +'; // one typed, then a word accepted
    assert.deepEqual(tracker.partlyAccepted(A, upToCursor), [partly('s1', 3)]);
    assert.deepEqual(tracker.partlyAccepted(A, upToCursor), [], 'no more than before: nothing');
    text = document + 'a -';
    assert.deepEqual(tracker.partlyAccepted(A, upToCursor), [], 'not the item\'s text');
    assert.deepEqual(tracker.partlyAccepted(A, () => undefined), [], 'the cursor before its start');
    assert.deepEqual(tracker.partlyAccepted(B, upToCursor), [], 'nothing shown there');
    text = document + 'a + b'; // the rest: VS Code accepts it whole and runs the command
    assert.deepEqual(tracker.partlyAccepted(A, upToCursor), []);
    assert.deepEqual(tracker.left(A), [], 'it is over');
  });

  test('reset: a new server knows none of the old ids', () => {
    const tracker = new SuggestionTracker();
    tracker.answered(A, [item('s1')]);
    tracker.reset();
    assert.deepEqual(tracker.left(A), []);
    assert.deepEqual(tracker.answered(A, [item('s1')]), [shown('s1')]);
  });
});
