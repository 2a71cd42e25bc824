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

  async sendRequest(type: Method, params?: unknown): Promise<unknown> {
    const method = methodOf(type);
    this.requests.push({ method, params });
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
