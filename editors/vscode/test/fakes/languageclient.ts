/**
 * A stand-in for `vscode-languageclient/node`: records how the extension builds its clients and
 * what it sends, and lets a test play the server (notifications, crashes, answers).
 */
export enum State {
  Stopped = 1,
  Starting = 3,
  StartFailed = 4,
  Running = 2,
}
export enum CloseAction {
  DoNotRestart = 1,
  Restart = 2,
}
export enum ErrorAction {
  Continue = 1,
  Shutdown = 2,
}
export class ResponseError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}
export enum RevealOutputChannelOn {
  Debug = 0,
  Info = 1,
  Warn = 2,
  Error = 3,
  Never = 4,
}
export const ExecuteCommandRequest = { type: { method: 'workspace/executeCommand' } };
export const DidChangeConfigurationNotification = { type: { method: 'workspace/didChangeConfiguration' } };

export interface CancellationToken {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}
export class CancellationTokenSource {
  private cancelled = false;
  private listeners: (() => void)[] = [];
  readonly token: CancellationToken = {
    isCancellationRequested: false,
    onCancellationRequested: (listener) => {
      this.listeners.push(listener);
      return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
    },
  };
  cancel(): void {
    if (!this.cancelled) {
      this.cancelled = true;
      (this.token as { isCancellationRequested: boolean }).isCancellationRequested = true;
      for (const listener of [...this.listeners]) {
        listener();
      }
    }
  }
}

type Method = string | { method: string };
const methodOf = (type: Method) => (typeof type === 'string' ? type : type.method);

/** How the fake server answers requests; a test replaces it. */
export let answer: (method: string, params: unknown) => unknown = () => null;
export function setAnswer(fn: (method: string, params: unknown) => unknown): void {
  answer = fn;
}
/** When set, start() fails with this error. */
export let startError: Error | undefined;
export function setStartError(error: Error | undefined): void {
  startError = error;
}
/** The `serverInfo` the fake server answers `initialize` with (none by default). */
export let serverInfo: { name: string; version?: string } | undefined;
export function setServerInfo(info: { name: string; version?: string } | undefined): void {
  serverInfo = info;
}

export const clients: LanguageClient[] = [];

export class LanguageClient {
  state = State.Stopped;
  proposed = false;
  disposed = false;
  initializeResult:
    | { capabilities: { executeCommandProvider?: { commands: string[] } }; serverInfo?: { name: string; version?: string } }
    | undefined;
  readonly notificationHandlers = new Map<string, (params: unknown) => void>();
  /** Handlers of the server's requests to the client (onRequest). */
  readonly requestHandlers = new Map<string, (params: unknown, token: CancellationToken) => unknown>();
  /** Static features (registerFeature), and the capabilities they filled at each start. */
  readonly features: { fillClientCapabilities(capabilities: Record<string, unknown>): void }[] = [];
  readonly capabilities: Record<string, unknown>[] = [];
  readonly stateListeners: ((event: { oldState: State; newState: State }) => void)[] = [];
  readonly requests: { method: string; params: unknown }[] = [];
  readonly notifications: { method: string; params: unknown }[] = [];
  /** The real client's converter, for the two conversions the extension uses (UTF-16 positions). */
  readonly code2ProtocolConverter = {
    asTextDocumentIdentifier: (document: { uri: { toString(): string } }) => ({ uri: document.uri.toString() }),
    asPosition: (position: { line: number; character: number }) => ({ line: position.line, character: position.character }),
  };
  /** initializationOptions as evaluated at each start. */
  readonly initializationOptions: unknown[] = [];

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: { command: string; args: string[]; transport?: unknown; options?: unknown },
    readonly clientOptions: any,
  ) {
    clients.push(this);
  }

  /** The client's own notifications: what would pop up, and what is only logged. */
  readonly popups: string[] = [];
  error(message: string, _data?: unknown, showNotification: boolean | 'force' = true): void {
    if (showNotification === 'force' || (showNotification && this.clientOptions.revealOutputChannelOn <= RevealOutputChannelOn.Error)) {
      this.popups.push(message);
    }
  }

  registerProposedFeatures(): void {
    this.proposed = true;
  }

  registerFeature(feature: { fillClientCapabilities(capabilities: Record<string, unknown>): void }): void {
    this.features.push(feature);
  }

  onRequest(method: string, handler: (params: unknown, token: CancellationToken) => unknown) {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }

  onNotification(method: string, handler: (params: unknown) => void) {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }

  onDidChangeState(listener: (event: { oldState: State; newState: State }) => void) {
    this.stateListeners.push(listener);
    return { dispose() {} };
  }

  private setState(newState: State): void {
    const oldState = this.state;
    this.state = newState;
    for (const listener of this.stateListeners) {
      listener({ oldState, newState });
    }
  }

  async start(): Promise<void> {
    this.setState(State.Starting);
    const options = this.clientOptions.initializationOptions;
    this.initializationOptions.push(typeof options === 'function' ? options() : options);
    // As the real client: its own capabilities, then each feature's (an experimental one of another's kept).
    const capabilities: Record<string, unknown> = { general: { positionEncodings: ['utf-16'] }, experimental: { other: 1 } };
    for (const feature of this.features) {
      feature.fillClientCapabilities(capabilities);
    }
    this.capabilities.push(capabilities);
    if (startError) {
      this.setState(State.StartFailed);
      this.error("lsp-infer client: couldn't create connection to server.", startError, 'force');
      throw startError;
    }
    this.initializeResult = { capabilities: {}, serverInfo };
    this.setState(State.Running);
  }

  isRunning(): boolean {
    return this.state === State.Running;
  }

  /** The cancellation token of each request (in the order of `requests`), where one was given. */
  readonly requestTokens: (CancellationToken | undefined)[] = [];

  async sendRequest(type: Method, params?: unknown, token?: CancellationToken): Promise<unknown> {
    const method = methodOf(type);
    this.requests.push({ method, params });
    this.requestTokens.push(token);
    const result = answer(method, params);
    if (result instanceof Error) {
      throw result;
    }
    return result;
  }

  async sendNotification(type: Method, params?: unknown): Promise<void> {
    this.notifications.push({ method: methodOf(type), params });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.setState(State.Stopped);
  }

  // -- playing the server --

  notify(method: string, params: unknown): void {
    this.notificationHandlers.get(method)?.(params);
  }

  /** A request from the server: the handler's answer (a rejection is what the real client would send as an error). */
  async request(method: string, params: unknown, token: CancellationToken = new CancellationTokenSource().token): Promise<unknown> {
    const handler = this.requestHandlers.get(method);
    if (handler === undefined) {
      throw new ResponseError(-32601, `Unhandled method ${method}`);
    }
    return handler(params, token);
  }

  /** The server process went away: ask the error handler what to do, as the real client does. */
  async crash(): Promise<unknown> {
    const result = await this.clientOptions.errorHandler.closed();
    if (result.action === CloseAction.Restart) {
      await this.start();
    } else {
      this.error(result.message ?? 'Connection to server got closed. Server will not be restarted.', undefined, result.handled ? false : 'force');
      this.setState(State.Stopped);
    }
    return result;
  }
}
