/**
 * The status bar's state machine: server process, model, requests in flight, enabled.
 *
 * Pure: `reduce` folds events into a state and `render` turns a state into the status bar's
 * text, tooltip and colour, so the whole thing is unit-tested without VS Code.
 */

export type ServerPhase = 'starting' | 'running' | 'restarting' | 'error';
/** `unknown`: the server has said nothing yet (or never will: a server without `lspInfer/status`). */
export type ModelPhase = 'unknown' | 'loading' | 'ready' | 'failed';

export interface StatusState {
  readonly server: ServerPhase;
  readonly serverMessage?: string;
  readonly model: ModelPhase;
  readonly modelMessage?: string;
  readonly enabled: boolean;
  readonly inFlight: number;
  readonly lastLatencyMs?: number;
  /**
   * The running server is lsp-infer, which sends `lspInfer/status` once the client says
   * `initialized`: until then its model is not ready, whatever `unknown` would suggest.
   */
  readonly reportsModel?: boolean;
}

export type StatusEvent =
  | { readonly type: 'serverStarting' }
  | { readonly type: 'serverRunning'; readonly reportsModel?: boolean }
  | { readonly type: 'serverRestarting'; readonly message: string }
  | { readonly type: 'serverError'; readonly message: string }
  | { readonly type: 'modelStatus'; readonly state: unknown; readonly message?: unknown }
  | { readonly type: 'requestStarted' }
  | { readonly type: 'requestFinished'; readonly latencyMs?: number }
  | { readonly type: 'enabled'; readonly enabled: boolean };

export function initialState(enabled: boolean): StatusState {
  return { server: 'starting', model: 'unknown', enabled, inFlight: 0 };
}

const MODEL_STATES: readonly string[] = ['loading', 'ready', 'failed'];

export function reduce(state: StatusState, event: StatusEvent): StatusState {
  switch (event.type) {
    case 'serverStarting':
      // A new process: nothing is known about its model, nothing is in flight.
      return { enabled: state.enabled, server: 'starting', model: 'unknown', inFlight: 0, lastLatencyMs: state.lastLatencyMs };
    case 'serverRunning':
      return { ...state, server: 'running', serverMessage: undefined, reportsModel: event.reportsModel ?? false };
    case 'serverRestarting':
      return { ...state, server: 'restarting', serverMessage: event.message, model: 'unknown', modelMessage: undefined, inFlight: 0 };
    case 'serverError':
      return { ...state, server: 'error', serverMessage: event.message, inFlight: 0 };
    case 'modelStatus': {
      if (typeof event.state !== 'string' || !MODEL_STATES.includes(event.state)) {
        return state; // a state this client does not know: ignore rather than guess
      }
      const model = event.state as ModelPhase;
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

/** What the status bar shows, most important first: a broken server, a failed model, off, … */
export type DisplayKind = 'error' | 'disabled' | 'starting' | 'loading' | 'busy' | 'ready';

export function displayKind(state: StatusState): DisplayKind {
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
  if (state.model === 'unknown' && state.reportsModel) {
    // Between the initialize answer and the server's first status: a short window, but a
    // sparkle shown there would claim a model that may still be loading.
    return 'starting';
  }
  return state.inFlight > 0 ? 'busy' : 'ready';
}

export function formatLatency(ms: number): string {
  if (ms < 1000) {
    return `${Math.round(ms)} ms`;
  }
  return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
}

export interface StatusView {
  readonly kind: DisplayKind;
  readonly text: string;
  readonly tooltip: string;
  /** Status bar background: `error` → statusBarItem.errorBackground, `warning` → warningBackground. */
  readonly background?: 'error' | 'warning';
}

const ICONS: Record<DisplayKind, string> = {
  error: '$(error)',
  disabled: '$(circle-slash)',
  starting: '$(loading~spin)',
  loading: '$(loading~spin)',
  busy: '$(sync~spin)',
  ready: '$(sparkle)',
};

export function render(state: StatusState): StatusView {
  const kind = displayKind(state);
  const latency = state.lastLatencyMs === undefined ? '' : ` ${formatLatency(state.lastLatencyMs)}`;
  let text = `${ICONS[kind]} lsp-infer`;
  let headline: string;
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
      headline =
        state.server === 'restarting'
          ? `Restarting the server: ${state.serverMessage ?? ''}`.trim()
          : state.server === 'running'
            ? 'Waiting for the server to report its model…'
            : 'Starting the server…';
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
export function suggestionCount(result: unknown): number {
  if (Array.isArray(result)) {
    return result.length;
  }
  if (typeof result === 'object' && result !== null && Array.isArray((result as { items?: unknown }).items)) {
    return (result as { items: unknown[] }).items.length;
  }
  return 0;
}
