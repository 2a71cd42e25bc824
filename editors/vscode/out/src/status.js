"use strict";
/**
 * The status bar's state machine: server process, model, requests in flight, enabled.
 *
 * Pure: `reduce` folds events into a state and `render` turns a state into the status bar's
 * text, tooltip and colour, so the whole thing is unit-tested without VS Code.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.initialState = initialState;
exports.reduce = reduce;
exports.displayKind = displayKind;
exports.formatLatency = formatLatency;
exports.render = render;
exports.suggestionCount = suggestionCount;
function initialState(enabled) {
    return { server: 'starting', model: 'unknown', enabled, inFlight: 0 };
}
const MODEL_STATES = ['loading', 'ready', 'failed'];
function reduce(state, event) {
    switch (event.type) {
        case 'serverStarting':
            // A new process: nothing is known about its model, nothing is in flight.
            return { enabled: state.enabled, server: 'starting', model: 'unknown', inFlight: 0, lastLatencyMs: state.lastLatencyMs };
        case 'serverRunning':
            return { ...state, server: 'running', serverMessage: undefined };
        case 'serverRestarting':
            return { ...state, server: 'restarting', serverMessage: event.message, model: 'unknown', modelMessage: undefined, inFlight: 0 };
        case 'serverError':
            return { ...state, server: 'error', serverMessage: event.message, inFlight: 0 };
        case 'modelStatus': {
            if (typeof event.state !== 'string' || !MODEL_STATES.includes(event.state)) {
                return state; // a state this client does not know: ignore rather than guess
            }
            const model = event.state;
            const modelMessage = typeof event.message === 'string' && event.message !== '' ? event.message : undefined;
            return { ...state, model, modelMessage };
        }
        case 'requestStarted':
            return { ...state, inFlight: state.inFlight + 1 };
        case 'requestFinished':
            return {
                ...state,
                inFlight: Math.max(0, state.inFlight - 1),
                lastLatencyMs: event.latencyMs === undefined ? state.lastLatencyMs : event.latencyMs,
            };
        case 'enabled':
            return { ...state, enabled: event.enabled };
    }
}
function displayKind(state) {
    if (state.server === 'error' || state.model === 'failed') {
        return 'error';
    }
    if (!state.enabled) {
        return 'disabled';
    }
    if (state.server === 'starting' || state.server === 'restarting') {
        return state.model === 'loading' ? 'loading' : 'starting';
    }
    if (state.model === 'loading') {
        return 'loading';
    }
    return state.inFlight > 0 ? 'busy' : 'ready';
}
function formatLatency(ms) {
    if (ms < 1000) {
        return `${Math.round(ms)} ms`;
    }
    return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
}
const ICONS = {
    error: '$(error)',
    disabled: '$(circle-slash)',
    starting: '$(loading~spin)',
    loading: '$(loading~spin)',
    busy: '$(sync~spin)',
    ready: '$(sparkle)',
};
function render(state) {
    const kind = displayKind(state);
    const latency = state.lastLatencyMs === undefined ? '' : ` ${formatLatency(state.lastLatencyMs)}`;
    let text = `${ICONS[kind]} lsp-infer`;
    let headline;
    switch (kind) {
        case 'error':
            headline =
                state.server === 'error'
                    ? `The server is not running: ${state.serverMessage ?? 'it stopped'}`
                    : `The model failed to load: ${state.modelMessage ?? 'see the output'}`;
            break;
        case 'disabled':
            headline = 'Completions are off (lspInfer.completion.enabled)';
            break;
        case 'starting':
            headline = state.server === 'restarting' ? `Restarting the server: ${state.serverMessage ?? ''}`.trim() : 'Starting the server…';
            break;
        case 'loading':
            text += ': loading model';
            headline = `Loading the model${state.modelMessage ? ` (${state.modelMessage})` : ''}…`;
            break;
        case 'busy':
            text += latency;
            headline = `Computing a suggestion (${state.inFlight} in flight)`;
            break;
        case 'ready':
            text += latency;
            headline = state.model === 'ready' ? `Ready: ${state.modelMessage ?? 'model loaded'}` : 'Ready';
            break;
    }
    const lines = [`lsp-infer — ${headline}`];
    if (state.modelMessage && kind !== 'loading' && kind !== 'ready' && state.model === 'ready') {
        lines.push(`Model: ${state.modelMessage}`);
    }
    if (state.lastLatencyMs !== undefined) {
        lines.push(`Last completion: ${formatLatency(state.lastLatencyMs)}`);
    }
    lines.push('Click for the lsp-infer menu');
    const background = kind === 'error' ? 'error' : state.server === 'restarting' ? 'warning' : undefined;
    return { kind, text, tooltip: lines.join('\n'), background };
}
/**
 * How many suggestions an inline completion result holds (`InlineCompletionItem[]`, an
 * `InlineCompletionList`, or nothing). Latency is shown only for answers with a suggestion:
 * the empty answers of a server still loading its model take no time and mean nothing.
 */
function suggestionCount(result) {
    if (Array.isArray(result)) {
        return result.length;
    }
    if (typeof result === 'object' && result !== null && Array.isArray(result.items)) {
        return result.items.length;
    }
    return 0;
}
//# sourceMappingURL=status.js.map