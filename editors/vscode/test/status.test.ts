import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  displayKind,
  formatLatency,
  initialState,
  reduce,
  render,
  type StatusEvent,
  type StatusState,
  suggestionCount,
} from '../src/status';

function run(events: StatusEvent[], enabled = true): StatusState {
  return events.reduce(reduce, initialState(enabled));
}

const STARTED: StatusEvent[] = [{ type: 'serverStarting' }, { type: 'serverRunning' }];

describe('status state machine', () => {
  test('starting → loading → ready → busy → ready', () => {
    let state = initialState(true);
    assert.equal(displayKind(state), 'starting');
    state = reduce(state, { type: 'serverStarting' });
    state = reduce(state, { type: 'serverRunning', reportsModel: true });
    assert.equal(displayKind(state), 'starting', 'lsp-infer sends its first status after initialized');
    state = reduce(state, { type: 'modelStatus', state: 'loading', message: 'loading the model' });
    assert.equal(displayKind(state), 'loading');
    assert.match(render(state).text, /loading model/);
    assert.equal(displayKind(reduce(state, { type: 'serverRunning', reportsModel: true })), 'loading', 'running does not forget the model is loading');
    state = reduce(state, { type: 'modelStatus', state: 'ready', message: 'qwen2.5-coder (qwen)' });
    assert.equal(displayKind(state), 'ready');
    assert.match(render(state).tooltip, /Ready: qwen2\.5-coder \(qwen\)/);
    state = reduce(state, { type: 'requestStarted' });
    assert.equal(displayKind(state), 'busy');
    assert.match(render(state).text, /sync~spin/);
    state = reduce(state, { type: 'requestFinished', latencyMs: 231.6 });
    assert.equal(displayKind(state), 'ready');
    assert.equal(render(state).text, '$(sparkle) lsp-infer 232 ms');
    assert.match(render(state).tooltip, /Last completion: 232 ms/);
  });

  test('overlapping requests: busy until the last one finishes; a cancelled one keeps the last latency', () => {
    let state = run([...STARTED, { type: 'modelStatus', state: 'ready' }, { type: 'requestFinished', latencyMs: 100 }]);
    state = reduce(state, { type: 'requestStarted' });
    state = reduce(state, { type: 'requestStarted' });
    state = reduce(state, { type: 'requestFinished' });
    assert.equal(displayKind(state), 'busy');
    assert.equal(state.lastLatencyMs, 100);
    state = reduce(state, { type: 'requestFinished', latencyMs: 80 });
    assert.equal(displayKind(state), 'ready');
    assert.equal(state.lastLatencyMs, 80);
    state = reduce(state, { type: 'requestFinished' });
    assert.equal(state.inFlight, 0, 'never negative');
  });

  test('model failed: error, with the server\'s message', () => {
    const state = run([...STARTED, { type: 'modelStatus', state: 'loading' }, { type: 'modelStatus', state: 'failed', message: 'sha256 mismatch' }]);
    assert.equal(displayKind(state), 'error');
    const view = render(state);
    assert.equal(view.background, 'error');
    assert.match(view.text, /\$\(error\)/);
    assert.match(view.tooltip, /The model failed to load: sha256 mismatch/);
  });

  test('a failed model can load again (settings changed)', () => {
    const state = run([...STARTED, { type: 'modelStatus', state: 'failed' }, { type: 'modelStatus', state: 'loading' }, { type: 'modelStatus', state: 'ready' }]);
    assert.equal(displayKind(state), 'ready');
  });

  test('server error: error whatever the model said', () => {
    const state = run([...STARTED, { type: 'modelStatus', state: 'ready' }, { type: 'serverError', message: 'lsp-infer is not on PATH' }]);
    assert.equal(displayKind(state), 'error');
    assert.match(render(state).tooltip, /not running: lsp-infer is not on PATH/);
  });

  test('disabled: shown instead of ready/busy/loading, and back', () => {
    let state = run([...STARTED, { type: 'modelStatus', state: 'ready' }, { type: 'enabled', enabled: false }]);
    assert.equal(displayKind(state), 'disabled');
    assert.match(render(state).text, /circle-slash/);
    state = reduce(state, { type: 'requestStarted' });
    assert.equal(displayKind(state), 'disabled');
    state = reduce(reduce(state, { type: 'requestFinished' }), { type: 'enabled', enabled: true });
    assert.equal(displayKind(state), 'ready');
    assert.equal(displayKind(run([{ type: 'modelStatus', state: 'loading' }], false)), 'disabled');
  });

  test('a restart forgets the old model state and requests in flight', () => {
    let state = run([...STARTED, { type: 'modelStatus', state: 'ready' }, { type: 'requestStarted' }]);
    state = reduce(state, { type: 'serverRestarting', message: 'the server stopped unexpectedly' });
    assert.equal(displayKind(state), 'starting');
    assert.equal(render(state).background, 'warning');
    assert.equal(state.inFlight, 0);
    state = reduce(state, { type: 'serverStarting' });
    assert.equal(state.model, 'unknown');
    state = reduce(state, { type: 'serverRunning' });
    assert.equal(displayKind(state), 'ready', 'a server that never reports its model is taken as ready');
  });

  test('lsp-infer running, its first status not yet sent: starting, not ready', () => {
    let state = run([{ type: 'serverStarting' }, { type: 'serverRunning', reportsModel: true }]);
    assert.equal(displayKind(state), 'starting');
    assert.match(render(state).tooltip, /Waiting for the server to report its model/);
    state = reduce(state, { type: 'modelStatus', state: 'ready' });
    assert.equal(displayKind(state), 'ready');
    state = reduce(state, { type: 'serverStarting' });
    state = reduce(state, { type: 'serverRunning', reportsModel: false });
    assert.equal(displayKind(state), 'ready', 'a server that does not report its model is taken as ready');
  });

  test('unknown model states from a newer server are ignored', () => {
    const state = run([...STARTED, { type: 'modelStatus', state: 'ready' }, { type: 'modelStatus', state: 'warming', message: 'x' }]);
    assert.equal(state.model, 'ready');
    assert.equal(run([{ type: 'modelStatus', state: 42 }]).model, 'unknown');
  });
});

describe('status helpers', () => {
  test('formatLatency', () => {
    assert.equal(formatLatency(0.4), '0 ms');
    assert.equal(formatLatency(999.4), '999 ms');
    assert.equal(formatLatency(1234), '1.2 s');
    assert.equal(formatLatency(12345), '12 s');
  });

  test('suggestionCount: arrays, lists, nothing', () => {
    assert.equal(suggestionCount([{}, {}]), 2);
    assert.equal(suggestionCount({ items: [{}] }), 1);
    assert.equal(suggestionCount({ items: [] }), 0);
    assert.equal(suggestionCount(null), 0);
    assert.equal(suggestionCount(undefined), 0);
  });
});
