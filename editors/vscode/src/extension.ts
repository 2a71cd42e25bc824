/**
 * The VS Code side of lsp-infer: starts `lsp-infer serve` over stdio through
 * vscode-languageclient and wires settings, status bar, output and commands to it.
 *
 * The decisions live in pure modules (settings, serverCommand, status, stats, commands,
 * restartPolicy, serverLog, logging, lifecycle, definitions, references, suggestionReady,
 * nextEdit); this file only connects them to VS Code.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as readline from 'readline';
import * as vscode from 'vscode';
import {
  type CancellationToken,
  type ClientCapabilities,
  CloseAction,
  type CloseHandlerResult,
  DidChangeConfigurationNotification,
  ErrorAction,
  type ErrorHandlerResult,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
  type StaticFeature,
} from 'vscode-languageclient/node';
import {
  COMMANDS,
  type ConfigTarget,
  type ExecuteCommandParams,
  menuItems,
  openFileUris,
  refactorFileParams,
  refactorFilesParams,
  SERVER_COMMANDS,
  toggleTarget,
  validateInstruction,
} from './commands';
import {
  announceDefinitions,
  answerBudgetMs,
  answerDefinitions,
  DEFINITIONS_METHOD,
  type DefinitionsResult,
  MAX_FILE_BYTES,
  type TextLines,
  textLines,
} from './definitions';
import { ACCEPT_SUGGESTION, type Offered, SuggestionTracker, suggestionId } from './lifecycle';
import { redactingChannel } from './logging';
import {
  accepted,
  drawing,
  fits,
  NEXT_EDIT_CONTEXT_KEY,
  NEXT_EDIT_METHOD,
  NEXT_EDIT_PAUSE_MS,
  type NextEdit,
  nextEditParams,
  NextEditTracker,
  parseNextEdit,
  rejected,
  tabAction,
} from './nextEdit';
import { announceReferences, answerReferences, positionEncoding, REFERENCES_BUDGET_MS, REFERENCES_METHOD, type ReferencesResult } from './references';
import { RestartPolicy } from './restartPolicy';
import { formatCommand, nodeHost, resolveServerCommand } from './serverCommand';
import { failureHint, type LogLevel, parseServerLogLine } from './serverLog';
import {
  buildServerSettings,
  changeImpact,
  configurationSectionValue,
  redactSettings,
  SECTION,
  type ServerSettings,
} from './settings';
import { formatStats, STATS_METHOD, statsErrorMessage } from './stats';
import { statsHtml } from './statsView';
import { initialState, reduce, render, type StatusEvent, type StatusState, suggestionCount } from './status';
import {
  announceSuggestionReady,
  cursorRestsAt,
  type EditorView,
  parseSuggestionReady,
  PendingReAsk,
  SUGGESTION_READY_METHOD,
  TRIGGER_INLINE_SUGGEST,
} from './suggestionReady';

const CLIENT_ID = 'lspInfer'; // also the prefix of the `lspInfer.trace.server` setting
const CLIENT_NAME = 'lsp-infer';
const STATUS_NOTIFICATION = 'lspInfer/status';
/** The `serverInfo.name` the lsp-infer server answers `initialize` with. */
const SERVER_NAME = 'lsp-infer';
/** Client → server: the cursor rests here; evaluate the prompt for it in the background. */
export const WARM_NOTIFICATION = 'lspInfer/warm';
/** The documents the client syncs to the server (its documentSelector). */
const DOCUMENT_SELECTOR = [{ scheme: 'file' }, { scheme: 'untitled' }];
const API_KEY_SECRET = 'lspInfer.team.apiKey';
const LAST_INSTRUCTION = 'lspInfer.lastInstruction';
const OPEN_SETTINGS = 'Open Settings';
const SHOW_OUTPUT = 'Show Output';
const RESTART = 'Restart';

const TARGETS: Record<ConfigTarget, vscode.ConfigurationTarget> = {
  global: vscode.ConfigurationTarget.Global,
  workspace: vscode.ConfigurationTarget.Workspace,
  workspaceFolder: vscode.ConfigurationTarget.WorkspaceFolder,
};

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The client, minus its own pop-ups: vscode-languageclient "forces" a generic error
 * notification ("couldn't create connection to server", "Restarting server failed", …) that
 * the extension replaces with its own messages, which say what to do and offer Restart.
 * Everything is still logged to the output channel.
 */
class Client extends LanguageClient {
  override error(message: string, data?: unknown, showNotification?: boolean | 'force'): void {
    super.error(message, data, showNotification === 'force' ? false : showNotification);
  }
}

/**
 * Announces what the extension does beyond LSP in the initialize capabilities
 * (`experimental.lspInfer`): `definitions` when `lspInfer.context.definitions` is on at the
 * start, `references` when `lspInfer.nextEdit.enabled` is, and always `suggestionReady`.
 */
class ExperimentalFeature implements StaticFeature {
  constructor(
    private readonly definitionsEnabled: () => boolean,
    private readonly referencesEnabled: () => boolean,
  ) {}
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    if (this.definitionsEnabled()) {
      announceDefinitions(capabilities);
    }
    if (this.referencesEnabled()) {
      announceReferences(capabilities);
    }
    announceSuggestionReady(capabilities);
  }
  getState(): { kind: 'static' } {
    return { kind: 'static' };
  }
  initialize(): void {}
  clear(): void {}
}

export interface ExtensionOptions {
  /** Runs `run` after `ms` milliseconds; returns a cancel function. Default: setTimeout (tests: by hand). */
  readonly schedule?: (run: () => void, ms: number) => () => void;
}

/** Wait after a failure before reporting it, so that the server's last stderr lines are read. */
const SETTLE_MS = 200;
/** A cursor moved without an edit is warmed once it has stayed put this long. */
export const WARM_DEBOUNCE_MS = 400;
/** The stats view asks the server again this often while it is visible. */
const STATS_REFRESH_MS = 10_000;
/** VS Code's own partial accepts, which the extension's commands run and then report. */
const ACCEPT_NEXT = { word: 'editor.action.inlineSuggest.acceptNextWord', line: 'editor.action.inlineSuggest.acceptNextLine' } as const;

type InlineResult = vscode.InlineCompletionItem[] | vscode.InlineCompletionList | null | undefined;

/** The server's items in an answer, with their ids and where they start in the document. */
function offered(document: vscode.TextDocument, position: vscode.Position, result: InlineResult): Offered[] {
  const items = Array.isArray(result) ? result : (result?.items ?? []);
  const out: Offered[] = [];
  for (const item of items) {
    const id = suggestionId(item.command);
    const text = typeof item.insertText === 'string' ? item.insertText : item.insertText.value;
    if (id === undefined) {
      return []; // not the lifecycle's (an older server): nothing to report
    }
    out.push({ id, text, start: document.offsetAt(item.range?.start ?? position) });
  }
  return out;
}

/** A notification to the server about a suggestion (the lifecycle's, a next edit's). */
interface ServerMessage {
  readonly method: string;
  readonly params: object;
}

/**
 * How a next edit is drawn: the removed text struck through in a red of its own (themable:
 * `lspInfer.nextEdit.removedForeground`, contributed in package.json), the inserted text as
 * ghost text after it, and the hint for an edit off screen at the end of the cursor's line.
 * The `after` text itself is given per decoration (the instance's options add to the type's).
 */
function nextEditStyles(): { removed: vscode.TextEditorDecorationType; inserted: vscode.TextEditorDecorationType; hint: vscode.TextEditorDecorationType } {
  return {
    removed: vscode.window.createTextEditorDecorationType({
      textDecoration: 'line-through',
      color: new vscode.ThemeColor('lspInfer.nextEdit.removedForeground'),
      backgroundColor: new vscode.ThemeColor('diffEditor.removedTextBackground'),
    }),
    inserted: vscode.window.createTextEditorDecorationType({
      after: { color: new vscode.ThemeColor('editorGhostText.foreground') },
    }),
    hint: vscode.window.createTextEditorDecorationType({
      after: { color: new vscode.ThemeColor('editorGhostText.foreground'), fontStyle: 'italic', margin: '0 0 0 2em' },
    }),
  };
}

/** The active editor's document, version and selections, as the re-ask check sees them. */
function editorView(editor: vscode.TextEditor): EditorView {
  return { uri: editor.document.uri.toString(), version: editor.document.version, selections: editor.selections };
}

export class Extension implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  private readonly rawOutput: vscode.LogOutputChannel;
  private readonly statusItem: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly restartPolicy = new RestartPolicy();
  private client: Client | undefined;
  /** Counts starts; a client's callbacks act only while theirs is the current one. */
  private generation = 0;
  /** The start whose failure was already handled (a failed start can also close the connection). */
  private failedGeneration = -1;
  private cancelRestart: (() => void) | undefined;
  private state: StatusState;
  private apiKey: string | undefined;
  /** A known cause of failure seen in the server's stderr, for the crash message. */
  private hint: string | undefined;
  /** Starts and stops run one after another. */
  private queue: Promise<void> = Promise.resolve();
  private disposed = false;
  /** What was shown of the current server's suggestions, and what became of it. */
  private readonly tracker = new SuggestionTracker();
  private statsPanel: vscode.WebviewPanel | undefined;
  private cancelStatsRefresh: (() => void) | undefined;
  /** The pending lspInfer/warm of a cursor that moved (one timer, restarted on every move). */
  private cancelWarm: (() => void) | undefined;
  /** The active document's version at its previous selection event (or when it became active). */
  private selectionBaseline: { uri: string; version: number } | undefined;
  /** The last lspInfer/warm sent (uri, version, line, character), so that none is sent twice. */
  private lastWarm: string | undefined;
  /** Whether the current server was told (at initialize) that the extension answers lspInfer/definitions. */
  private announcedDefinitions = false;
  /** Whether the current server was told (at initialize) that the extension answers lspInfer/references. */
  private announcedReferences = false;
  /** The inline suggestions asked again after lspInfer/suggestionReady, whose request goes as Automatic. */
  private readonly reAsk = new PendingReAsk((run, ms) => this.schedule(run, ms));
  /** The next-edit suggestion on screen, and what its changes tell the server. */
  private readonly nextEdits = new NextEditTracker();
  private readonly nextEditStyles = nextEditStyles();
  /** The editor the next edit is drawn in (the active one when it was drawn). */
  private nextEditEditor: vscode.TextEditor | undefined;
  /**
   * The line Tab just revealed: on screen, though the editor's visibleRanges say so only once
   * the scroll is reported (after the cursor move); until then the hint would flash there.
   */
  private nextEditRevealedLine: number | undefined;
  /** The value last given to the `lspInfer.nextEditVisible` context key. */
  private nextEditVisible = false;
  /** The pause after the last edit, then lspInfer/nextEdit (one timer, restarted by every edit). */
  private cancelNextEditPause: (() => void) | undefined;
  /** The lspInfer/nextEdit request in flight: the next edit cancels it. */
  private nextEditRequest: vscode.CancellationTokenSource | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly options: ExtensionOptions = {},
  ) {
    this.rawOutput = vscode.window.createOutputChannel(CLIENT_NAME, { log: true });
    this.output = redactingChannel(this.rawOutput, () => [this.apiKey]);
    this.statusItem = vscode.window.createStatusBarItem('lspInfer.status', vscode.StatusBarAlignment.Right, 100);
    this.statusItem.name = 'lsp-infer';
    this.statusItem.command = COMMANDS.showMenu;
    this.state = initialState(this.completionsEnabled());
    this.disposables.push(this.rawOutput, this.statusItem, ...Object.values(this.nextEditStyles));
    this.renderStatus();
    this.statusItem.show();
  }

  async activate(): Promise<void> {
    const register = (id: string, run: (...args: any[]) => unknown) =>
      this.disposables.push(vscode.commands.registerCommand(id, run));
    register(COMMANDS.refactorFile, (uri?: vscode.Uri) => this.refactorFile(uri));
    register(COMMANDS.refactorOpenFiles, () => this.refactorOpenFiles());
    register(COMMANDS.toggleCompletions, () => this.toggleCompletions());
    register(COMMANDS.showStats, () => this.showStats());
    register(COMMANDS.restartServer, () => this.restart(true));
    register(COMMANDS.setTeamApiKey, () => this.setTeamApiKey());
    register(COMMANDS.showOutput, () => this.output.show(true));
    register(COMMANDS.showMenu, () => this.showMenu());
    register(COMMANDS.acceptNextWord, () => this.acceptNext('word'));
    register(COMMANDS.acceptNextLine, () => this.acceptNext('line'));
    register(COMMANDS.nextEditAccept, () => this.acceptNextEdit());
    register(COMMANDS.nextEditDismiss, () => this.dismissNextEdit());
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((event) => this.onConfigurationChanged(event)),
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        this.report(this.tracker.focused(editor?.document.uri.toString()));
        this.nextEditEditorChanged(editor);
        this.onActiveEditorChanged(editor);
      }),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        this.redrawNextEdit(event.textEditor); // the hint follows the cursor's line
        this.onSelectionChanged(event);
      }),
      vscode.window.onDidChangeTextEditorVisibleRanges((event) => {
        this.nextEditRevealedLine = undefined; // the scroll is reported: visibleRanges tell
        this.redrawNextEdit(event.textEditor);
      }),
      vscode.workspace.onDidChangeTextDocument((event) => this.onDocumentChanged(event)),
      vscode.workspace.onDidCloseTextDocument((document) => {
        this.report(this.tracker.left(document.uri.toString()));
        this.report(this.nextEdits.left(document.uri.toString()));
        this.syncNextEditDrawing();
      }),
      this.context.secrets.onDidChange(async (event) => {
        if (event.key === API_KEY_SECRET) {
          await this.loadApiKey();
          this.notifyServer();
        }
      }),
    );
    await this.loadApiKey();
    // Not awaited: activation does not wait for the server's initialize answer.
    void this.restart(false);
  }

  /** Resolves when the starts and stops asked for so far are done (for tests). */
  settled(): Promise<void> {
    return this.queue;
  }

  // -- settings ---------------------------------------------------------------------------

  private completionsEnabled(): boolean {
    return vscode.workspace.getConfiguration(SECTION).get<boolean>('completion.enabled', true) !== false;
  }

  private definitionsEnabled(): boolean {
    return vscode.workspace.getConfiguration(SECTION).get<boolean>('context.definitions', true) !== false;
  }

  private nextEditEnabled(scope?: vscode.Uri): boolean {
    return vscode.workspace.getConfiguration(SECTION, scope).get<boolean>('nextEdit.enabled', true) !== false;
  }

  private async loadApiKey(): Promise<void> {
    try {
      this.apiKey = (await this.context.secrets.get(API_KEY_SECRET)) || undefined;
    } catch (error) {
      this.output.warn(`Could not read the team API key from the secret storage: ${errorMessage(error)}`);
      this.apiKey = undefined;
    }
  }

  /** The server's settings object for a scope: VS Code settings plus the API key. */
  serverSettings(scope?: vscode.Uri): ServerSettings {
    const config = vscode.workspace.getConfiguration(SECTION, scope);
    return buildServerSettings((key) => {
      const inspected = config.inspect(key);
      const isSet =
        inspected !== undefined &&
        (inspected.globalValue !== undefined || inspected.workspaceValue !== undefined || inspected.workspaceFolderValue !== undefined);
      return { value: config.get(key), isSet };
    }, this.apiKey);
  }

  private onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
    const impact = changeImpact((section) => event.affectsConfiguration(section));
    if (event.affectsConfiguration(`${SECTION}.context.definitions`) && this.definitionsEnabled() && !this.announcedDefinitions && this.client?.isRunning()) {
      // The capability goes with initialize: this server was started without it.
      this.output.info('lspInfer.context.definitions is on: the server asks for definitions from its next start (lsp-infer: Restart Server)');
    }
    if (event.affectsConfiguration(`${SECTION}.nextEdit.enabled`) && this.nextEditEnabled() && !this.announcedReferences && this.client?.isRunning()) {
      // Next edits work at once; the renames from the language servers' references from the next start.
      this.output.info('lspInfer.nextEdit.enabled is on: the server asks for references from its next start (lsp-infer: Restart Server)');
    }
    if (impact.enabled) {
      this.dispatch({ type: 'enabled', enabled: this.completionsEnabled() });
    }
    if (event.affectsConfiguration(`${SECTION}.nextEdit.enabled`) && !this.nextEditEnabled()) {
      this.stopAskingNextEdit();
      this.report(this.nextEdits.reject()); // turned off: what is on screen goes
      this.syncNextEditDrawing();
    }
    if (impact.restart) {
      this.output.info('lspInfer.server.* changed: restarting the server');
      void this.restart(true);
    } else if (impact.notify) {
      this.notifyServer();
    }
  }

  /** `workspace/didChangeConfiguration` with null settings: the server pulls its section. */
  private notifyServer(): void {
    const client = this.client;
    if (client === undefined || !client.isRunning()) {
      return;
    }
    this.output.debug(`Settings changed: ${JSON.stringify(redactSettings(this.serverSettings()))}`);
    client.sendNotification(DidChangeConfigurationNotification.type, { settings: null }).catch((error: unknown) => {
      this.output.warn(`Could not send the new settings to the server: ${errorMessage(error)}`);
    });
  }

  // -- status -----------------------------------------------------------------------------

  private dispatch(event: StatusEvent): void {
    this.state = reduce(this.state, event);
    this.renderStatus();
  }

  private renderStatus(): void {
    const view = render(this.state);
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.backgroundColor =
      view.background === undefined ? undefined : new vscode.ThemeColor(`statusBarItem.${view.background}Background`);
  }

  // -- the server -------------------------------------------------------------------------

  /** Stop the server (if running) and start it again. `byUser`: a fresh crash count. */
  restart(byUser: boolean): Promise<void> {
    if (byUser) {
      this.restartPolicy.reset();
    }
    this.cancelRestart?.();
    this.cancelRestart = undefined;
    this.queue = this.queue.then(async () => {
      await this.stopClient();
      if (!this.disposed) {
        await this.startClient();
      }
    });
    return this.queue;
  }

  private async startClient(): Promise<void> {
    const generation = ++this.generation;
    this.hint = undefined;
    this.tracker.reset();
    this.lastWarm = undefined; // a new server has nothing warm yet
    this.reAsk.clear();
    // The old server's next edit: its id means nothing to the new one (nothing is reported).
    this.stopAskingNextEdit();
    this.nextEdits.reset();
    this.syncNextEditDrawing();
    this.dispatch({ type: 'serverStarting' });
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const workspaceFolder = folder?.scheme === 'file' ? folder.fsPath : undefined;
    const config = vscode.workspace.getConfiguration(SECTION);
    const resolved = resolveServerCommand(config.get('server.command'), config.get('server.pythonPath'), nodeHost(workspaceFolder));
    if (!resolved.ok) {
      this.output.error(`${resolved.problem} ${resolved.fix}`);
      this.dispatch({ type: 'serverError', message: resolved.problem });
      void this.offer(vscode.window.showErrorMessage(`lsp-infer: ${resolved.problem} ${resolved.fix}`, OPEN_SETTINGS, SHOW_OUTPUT), resolved.setting);
      return;
    }
    this.output.info(`Starting the server: ${formatCommand(resolved.command, resolved.args)} (from ${resolved.source})`);
    const serverOptions: ServerOptions = {
      command: resolved.command,
      args: [...resolved.args],
      // No `transport`: plain stdio. (TransportKind.stdio would append `--stdio`.)
      // A cwd that does not exist makes spawn fail with ENOENT, as if the command were missing.
      options: { cwd: workspaceFolder !== undefined && fs.existsSync(workspaceFolder) ? workspaceFolder : os.homedir(), env: process.env },
    };
    const client = new Client(CLIENT_ID, CLIENT_NAME, serverOptions, this.clientOptions(generation));
    // Inline completion (textDocument/inlineCompletion): a proposed feature in
    // vscode-languageclient 9, enabled only by this call; built in from 10 on, where this
    // registers nothing. Kept so the extension works with either.
    client.registerProposedFeatures();
    this.announcedDefinitions = false;
    this.announcedReferences = false;
    // Whether a request is announced, read at initialize, and recorded for this server.
    const announced = (enabled: () => boolean, record: (on: boolean) => void) => () => {
      const on = enabled();
      if (generation === this.generation) {
        record(on);
      }
      return on;
    };
    client.registerFeature(
      new ExperimentalFeature(
        announced(() => this.definitionsEnabled(), (on) => (this.announcedDefinitions = on)),
        announced(() => this.nextEditEnabled(), (on) => (this.announcedReferences = on)),
      ),
    );
    client.onRequest(DEFINITIONS_METHOD, (params: unknown, token: CancellationToken) => this.answerDefinitions(generation, params, token));
    client.onRequest(REFERENCES_METHOD, (params: unknown, token: CancellationToken) => this.answerReferences(client, generation, params, token));
    client.onNotification(SUGGESTION_READY_METHOD, (params: unknown) => this.onSuggestionReady(generation, params));
    client.onNotification(STATUS_NOTIFICATION, (params: { state?: unknown; message?: unknown } | undefined) => {
      if (generation === this.generation) {
        this.output.info(`Model ${String(params?.state)}: ${String(params?.message ?? '')}`);
        this.dispatch({ type: 'modelStatus', state: params?.state, message: params?.message });
      }
    });
    client.onDidChangeState((event) => {
      if (generation !== this.generation) {
        return;
      }
      if (event.newState === State.Running) {
        // lsp-infer reports its model (lspInfer/status); another server named in
        // lspInfer.server.command may not, and is then taken as ready.
        this.dispatch({ type: 'serverRunning', reportsModel: client.initializeResult?.serverInfo?.name === SERVER_NAME });
      } else if (event.newState === State.Starting) {
        this.dispatch({ type: 'serverStarting' });
      }
    });
    this.client = client;
    try {
      await client.start();
      this.output.info(`Settings sent to the server: ${JSON.stringify(redactSettings(this.serverSettings()))}`);
      // The file open when the server starts: the server warms it once the model is loaded.
      const editor = vscode.window.activeTextEditor;
      if (editor !== undefined) {
        this.warm(editor);
      }
    } catch (error) {
      this.output.error(`The server did not start: ${errorMessage(error)}`);
      void this.serverFailed(generation, `the server did not start (${errorMessage(error)})`);
    }
  }

  private clientOptions(generation: number): LanguageClientOptions {
    return {
      documentSelector: DOCUMENT_SELECTOR,
      outputChannel: this.output,
      traceOutputChannel: this.output,
      // Failed requests are logged, never popped up (one per keystroke would be unbearable).
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // Logged here; the start's failure is reported once, by startClient.
      initializationFailedHandler: (error) => {
        this.output.error(`Server initialization failed: ${errorMessage(error)}`);
        return false;
      },
      // A function: evaluated at every (re)start, so a restart sends the current settings.
      initializationOptions: () => this.serverSettings(),
      errorHandler: {
        error: (_error, _message, count): ErrorHandlerResult =>
          count !== undefined && count <= 3 ? { action: ErrorAction.Continue } : { action: ErrorAction.Shutdown },
        closed: (): CloseHandlerResult => {
          void this.serverFailed(generation, 'the server stopped unexpectedly');
          // Never the client's own restart: every start is a new client, made by startClient.
          return { action: CloseAction.DoNotRestart, handled: true, message: 'The connection to the server closed.' };
        },
      },
      stdioOptions: {
        // Used only with pipe/socket transports; over stdio, stdout is the protocol.
        stdout: (input, channel) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (line) => channel.info(`[server] ${line}`));
        },
        // The server logs to stderr: each line at its own level, not all as errors.
        stderr: (input, channel) => {
          let level: LogLevel = 'info';
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (line) => {
            const parsed = parseServerLogLine(line, level);
            level = parsed.level;
            if (parsed.text !== '') {
              channel[parsed.level](`[server] ${parsed.text}`);
            }
            this.hint = failureHint(line) ?? this.hint;
          });
        },
      },
      middleware: {
        workspace: {
          configuration: async (params, token, next) => {
            const ours = params.items.map((item) =>
              configurationSectionValue(this.serverSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined), item.section),
            );
            if (ours.every((value) => value !== undefined)) {
              return ours;
            }
            const theirs = await next(params, token);
            if (theirs instanceof ResponseError || !Array.isArray(theirs)) {
              return theirs;
            }
            return ours.map((value, i) => (value === undefined ? theirs[i] : value));
          },
        },
        provideInlineCompletionItems: async (document, position, context, token, next) => {
          if (!this.state.enabled) {
            return undefined;
          }
          this.dispatch({ type: 'requestStarted' });
          const started = Date.now();
          let result: Awaited<ReturnType<typeof next>>;
          try {
            result = await next(document, position, this.reAskContext(document, position, context), token);
          } catch (error) {
            this.dispatch({ type: 'requestFinished' });
            throw error;
          }
          const answered = !token.isCancellationRequested && suggestionCount(result) > 0;
          this.dispatch({ type: 'requestFinished', latencyMs: answered ? Date.now() - started : undefined });
          if (!token.isCancellationRequested) {
            // VS Code shows the first item of the answer to a request it did not cancel.
            this.report(this.tracker.answered(document.uri.toString(), offered(document, position, result)));
          }
          return result;
        },
        // The accept command of an item (VS Code runs it when the item is accepted whole)
        // goes on to the server; here it ends the suggestion shown in its document.
        executeCommand: (command, args, next) => {
          if (command === ACCEPT_SUGGESTION) {
            const id = suggestionId({ command, arguments: args });
            this.report(id === undefined ? [] : this.tracker.accepted(id));
          }
          return next(command, args);
        },
        // The server also offers a textDocument/completion fallback for editors without inline
        // completion. VS Code has it, and asking both on every keystroke would make the two
        // requests supersede each other on the server's single model lane: never ask.
        provideCompletionItem: () => undefined,
        // Never a reference provider (lsp-infer offers none today; this keeps it so): its
        // lspInfer/references asks VS Code's reference providers, which must be the other
        // language servers, and must not come back to the server that is waiting for them.
        provideReferences: () => undefined,
      },
    };
  }

  /**
   * The server stopped, or did not start: restart it after a pause (up to 4 times in 3 minutes,
   * like vscode-languageclient's default error handler), then give up and offer Restart.
   */
  private async serverFailed(generation: number, reason: string): Promise<void> {
    if (generation !== this.generation || generation === this.failedGeneration || this.disposed) {
      return;
    }
    this.failedGeneration = generation;
    // The process is gone but its last stderr lines (the reason, often) may still be in flight.
    await new Promise<void>((resolve) => this.schedule(resolve, SETTLE_MS));
    if (generation !== this.generation || this.disposed) {
      return;
    }
    const decision = this.restartPolicy.onCrash();
    const hint = this.hint ? ` ${this.hint}` : '';
    if (decision.restart) {
      const message = `${reason}; restarting it (${decision.crashes} of ${this.restartPolicy.maxRestarts})`;
      this.output.warn(message + hint);
      this.dispatch({ type: 'serverRestarting', message });
      if (decision.crashes === 1) {
        void this.offerRestart(vscode.window.showWarningMessage(`lsp-infer: ${message}.${hint}`, SHOW_OUTPUT));
      }
      this.cancelRestart = this.schedule(() => {
        this.cancelRestart = undefined;
        if (generation === this.generation && !this.disposed) {
          void this.restart(false);
        }
      }, this.restartPolicy.delayMs(decision.crashes));
      return;
    }
    const message = `the server failed ${decision.crashes} times in the last 3 minutes and is not restarted again (last: ${reason})`;
    this.output.error(message + hint);
    this.dispatch({ type: 'serverError', message: reason });
    void this.offerRestart(vscode.window.showErrorMessage(`lsp-infer: ${message}.${hint}`, RESTART, SHOW_OUTPUT, OPEN_SETTINGS));
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.generation++; // what the stopped client still reports is ignored
    if (client === undefined) {
      return;
    }
    try {
      await client.dispose(3000);
    } catch (error) {
      // A client whose start failed "can't be stopped"; it is disposed all the same.
      this.output.debug(`Stopping the server: ${errorMessage(error)}`);
    }
  }

  /** The server's commands are registered as VS Code commands by the client when advertised. */
  private async serverOffers(command: string): Promise<boolean> {
    const advertised = this.client?.initializeResult?.capabilities.executeCommandProvider?.commands;
    if (advertised?.includes(command)) {
      return true;
    }
    return (await vscode.commands.getCommands(true)).includes(command);
  }

  private runningClient(): Client | undefined {
    if (this.client?.isRunning()) {
      return this.client;
    }
    void this.offerRestart(vscode.window.showWarningMessage('lsp-infer: the server is not running.', RESTART, SHOW_OUTPUT));
    return undefined;
  }

  // -- commands ---------------------------------------------------------------------------

  private async askInstruction(title: string): Promise<string | undefined> {
    const instruction = await vscode.window.showInputBox({
      title,
      prompt: 'What should change? The team server rewrites the code and the edits are applied to the files.',
      placeHolder: 'e.g. add type hints to every function',
      value: this.context.workspaceState.get<string>(LAST_INSTRUCTION),
      validateInput: validateInstruction,
      ignoreFocusOut: true,
    });
    if (instruction === undefined || instruction.trim() === '') {
      return undefined;
    }
    await this.context.workspaceState.update(LAST_INSTRUCTION, instruction.trim());
    return instruction;
  }

  private async executeServerCommand(params: ExecuteCommandParams, what: string): Promise<void> {
    const client = this.runningClient();
    if (client === undefined) {
      return;
    }
    if (!(await this.serverOffers(params.command))) {
      void vscode.window.showInformationMessage(
        `lsp-infer: this server does not offer ${params.command}. Refactors need the team tier: ` +
          'a server version with it, lspInfer.team.url and the API key ("lsp-infer: Set Team API Key").',
      );
      return;
    }
    this.output.info(`${params.command}: ${what}`);
    try {
      const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, params);
      const detail = typeof result === 'string' ? `: ${result}` : '';
      void vscode.window.showInformationMessage(`lsp-infer: refactor of ${what} finished${detail}.`);
    } catch (error) {
      if (error instanceof ResponseError && error.code === -32800) {
        this.output.info(`${params.command}: cancelled`);
        return;
      }
      this.output.error(`${params.command} failed: ${errorMessage(error)}`);
      void this.offer(vscode.window.showErrorMessage(`lsp-infer: refactor of ${what} failed: ${errorMessage(error)}`, SHOW_OUTPUT));
    }
  }

  async refactorFile(uri?: vscode.Uri): Promise<void> {
    const target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
    if (target === undefined) {
      void vscode.window.showWarningMessage('lsp-infer: open the file to refactor first.');
      return;
    }
    const name = path.basename(target.path);
    const instruction = await this.askInstruction(`lsp-infer: Refactor ${name}`);
    if (instruction !== undefined) {
      await this.executeServerCommand(refactorFileParams(target.toString(), instruction), name);
    }
  }

  async refactorOpenFiles(): Promise<void> {
    const uris = openFileUris(vscode.workspace.textDocuments);
    if (uris.length === 0) {
      void vscode.window.showWarningMessage('lsp-infer: no open files to refactor.');
      return;
    }
    const what = `${uris.length} open file${uris.length === 1 ? '' : 's'}`;
    const instruction = await this.askInstruction(`lsp-infer: Refactor ${what}`);
    if (instruction !== undefined) {
      await this.executeServerCommand(refactorFilesParams(uris, instruction), what);
    }
  }

  async toggleCompletions(): Promise<void> {
    // A resource, so that a folder-level value can be seen and written in a multi-root workspace.
    const scope = vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
    const config = vscode.workspace.getConfiguration(SECTION, scope);
    const enabled = config.get<boolean>('completion.enabled', true) !== false;
    await config.update('completion.enabled', !enabled, TARGETS[toggleTarget(config.inspect('completion.enabled'))]);
    void vscode.window.setStatusBarMessage(`lsp-infer: completions ${enabled ? 'off' : 'on'}`, 3000);
  }

  async showStats(): Promise<void> {
    const client = this.runningClient();
    if (client === undefined) {
      return;
    }
    let stats: unknown;
    try {
      stats = await client.sendRequest(STATS_METHOD, {});
    } catch (error) {
      const message = statsErrorMessage(error);
      this.output.warn(message);
      void vscode.window.showWarningMessage(message);
      return;
    }
    this.output.info(formatStats(stats).join('\n'));
    this.renderStats(stats);
  }

  /** The stats view (a webview of inline SVG, no script), opened or brought forward. */
  private renderStats(stats: unknown): void {
    let panel = this.statsPanel;
    if (panel === undefined) {
      panel = vscode.window.createWebviewPanel('lspInfer.stats', 'lsp-infer stats', vscode.ViewColumn.Active, { enableScripts: false });
      this.statsPanel = panel;
      panel.onDidDispose(() => {
        this.statsPanel = undefined;
        this.cancelStatsRefresh?.();
        this.cancelStatsRefresh = undefined;
      });
    } else if (!panel.visible) {
      panel.reveal();
    }
    panel.webview.html = statsHtml(stats, { cspSource: panel.webview.cspSource, when: new Date() });
    this.cancelStatsRefresh?.();
    this.cancelStatsRefresh = this.schedule(() => void this.refreshStats(), STATS_REFRESH_MS);
  }

  /** While the view is open: ask again, quietly (a failure keeps the last figures). */
  private async refreshStats(): Promise<void> {
    this.cancelStatsRefresh = undefined;
    const panel = this.statsPanel;
    const client = this.client;
    if (panel === undefined) {
      return;
    }
    if (!panel.visible || client === undefined || !client.isRunning()) {
      this.cancelStatsRefresh = this.schedule(() => void this.refreshStats(), STATS_REFRESH_MS);
      return;
    }
    try {
      const stats = await client.sendRequest(STATS_METHOD, {});
      if (this.statsPanel === panel) {
        this.renderStats(stats); // not when the view was closed while the server answered
      }
    } catch (error) {
      this.output.debug(`Refreshing the stats view: ${errorMessage(error)}`);
      this.cancelStatsRefresh = this.schedule(() => void this.refreshStats(), STATS_REFRESH_MS);
    }
  }

  // -- warming the prompt where the cursor rests --------------------------------------------

  /** Switched files: warm the new editor's cursor at once. */
  private onActiveEditorChanged(editor: vscode.TextEditor | undefined): void {
    this.cancelWarm?.();
    this.cancelWarm = undefined;
    const document = editor?.document;
    this.selectionBaseline = document === undefined ? undefined : { uri: document.uri.toString(), version: document.version };
    if (editor !== undefined) {
      this.warm(editor);
    }
  }

  /**
   * The cursor moved: warm it once it has rested for WARM_DEBOUNCE_MS, unless an edit moved it.
   *
   * An edit is told apart by the document's version, not by `event.kind`: typing reports
   * `Keyboard` like an arrow key does (and undo, paste, formatting come as `undefined` or
   * `Command`, like a go-to-definition). VS Code sends a document's change before the selection
   * change it causes, so a version that differs from the one at the previous selection event of
   * this document (or when its editor became active) means the move came with an edit: the
   * keystroke's own inline completion request already evaluates the prompt there, and a pending
   * warm is dropped (typing has started). A move without an edit restarts the one timer.
   */
  private onSelectionChanged(event: vscode.TextEditorSelectionChangeEvent): void {
    const editor = event.textEditor;
    if (editor !== vscode.window.activeTextEditor) {
      return; // another visible editor (a split, a peek): not where the user is
    }
    const document = editor.document;
    const uri = document.uri.toString();
    const previous = this.selectionBaseline;
    this.selectionBaseline = { uri, version: document.version };
    this.cancelWarm?.();
    this.cancelWarm = undefined;
    const version = document.version;
    if (previous !== undefined && previous.uri === uri && previous.version !== version) {
      return; // moved by an edit
    }
    this.cancelWarm = this.schedule(() => {
      this.cancelWarm = undefined;
      // Still the active editor, and not edited meanwhile (then typing took over).
      if (editor === vscode.window.activeTextEditor && document.version === version) {
        this.warm(editor);
      }
    }, WARM_DEBOUNCE_MS);
  }

  /** `lspInfer/warm` for the editor's cursor: synced documents, a running server, once per place. */
  private warm(editor: vscode.TextEditor): void {
    const client = this.client;
    const document = editor.document;
    if (client === undefined || !client.isRunning() || !this.state.enabled || this.disposed) {
      return;
    }
    if (vscode.languages.match(DOCUMENT_SELECTOR, document) === 0) {
      return; // not synced to the server (another scheme): it would not know the document
    }
    if (vscode.workspace.getConfiguration(SECTION, document.uri).get<boolean>('completion.warm', true) === false) {
      return; // the server would ignore it (it gets the same setting)
    }
    const position = editor.selection.active;
    const key = JSON.stringify([document.uri.toString(), document.version, position.line, position.character]);
    if (key === this.lastWarm) {
      return;
    }
    this.lastWarm = key;
    const params = {
      textDocument: client.code2ProtocolConverter.asTextDocumentIdentifier(document),
      position: client.code2ProtocolConverter.asPosition(position),
    };
    client.sendNotification(WARM_NOTIFICATION, params).catch((error: unknown) => {
      this.output.debug(`Could not send ${WARM_NOTIFICATION}: ${errorMessage(error)}`);
    });
  }

  // -- lspInfer/definitions: where names near the cursor are defined ------------------------

  /**
   * The server asks where the names at these positions are defined: VS Code's definition
   * providers (the language servers it runs) answer, and each target's text goes back. Within
   * a time bound, and never an error: a failed position is null.
   */
  private async answerDefinitions(generation: number, params: unknown, token: CancellationToken): Promise<DefinitionsResult> {
    try {
      if (generation !== this.generation || this.disposed || !this.definitionsEnabled()) {
        return { definitions: [] }; // an old server, or the user turned it off since the start
      }
      const started = Date.now();
      const budgetMs = answerBudgetMs(vscode.workspace.getConfiguration(SECTION).get('context.definitionsMs'));
      const result = await answerDefinitions<vscode.Uri>(
        params,
        {
          // Positions are UTF-16 (the only encoding the client offers), as VS Code's are.
          find: (uri, at) =>
            vscode.commands.executeCommand<unknown>('vscode.executeDefinitionProvider', vscode.Uri.parse(uri), new vscode.Position(at.line, at.character)),
          read: (uri) => this.readDefinitionTarget(uri),
          schedule: (run, ms) => this.schedule(run, ms),
        },
        { budgetMs, token },
      );
      const found = result.definitions.filter((d) => d !== null).length;
      this.output.debug(`${DEFINITIONS_METHOD}: ${found} of ${result.definitions.length} found in ${Date.now() - started} ms`);
      return result;
    } catch (error) {
      this.output.debug(`${DEFINITIONS_METHOD}: ${errorMessage(error)}`);
      return { definitions: [] };
    }
  }

  // -- lspInfer/references: where the name at the cursor is used in its document -----------

  /**
   * The server asks, when the cursor rests on a name, where that name is used in the same
   * document: VS Code's reference providers (the other extensions' language servers) answer
   * for the document at the version asked, and the ranges in that document go back, in the
   * negotiated encoding. Null when the document is not open at that version, the providers
   * fail or take longer than REFERENCES_BUDGET_MS, or find nothing there. Never an error.
   */
  private async answerReferences(client: LanguageClient, generation: number, params: unknown, token: CancellationToken): Promise<ReferencesResult | null> {
    try {
      if (generation !== this.generation || this.disposed) {
        return null; // an old server
      }
      const started = Date.now();
      const answer = await answerReferences(
        params,
        {
          // Only an open document whose next edits are on (the server asks for no other).
          document: (uri) => {
            const document = vscode.workspace.textDocuments.find((open) => open.uri.toString() === uri);
            return document !== undefined && this.nextEditEnabled(document.uri) ? document : undefined;
          },
          // Declaration included: executeReferenceProvider asks with includeDeclaration true.
          find: (uri, at) =>
            vscode.commands.executeCommand<unknown>('vscode.executeReferenceProvider', vscode.Uri.parse(uri), new vscode.Position(at.line, at.character)),
          schedule: (run, ms) => this.schedule(run, ms),
        },
        {
          // Always UTF-16 with vscode-languageclient (it offers no other and refuses a server
          // that picks one), VS Code's own: the conversions are then none.
          encoding: positionEncoding(client.initializeResult?.capabilities.positionEncoding),
          budgetMs: REFERENCES_BUDGET_MS,
          token,
        },
      );
      const count = answer.result?.references.length ?? 0;
      this.output.debug(`${REFERENCES_METHOD}: ${answer.outcome}${count > 0 ? ` (${count})` : ''} in ${Date.now() - started} ms`);
      return answer.result;
    } catch (error) {
      this.output.debug(`${REFERENCES_METHOD}: ${errorMessage(error)}`);
      return null;
    }
  }

  /**
   * A definition's document: the editor's copy when it is open; else a file is read from disk
   * without opening it as a document (an opened document would be synced to the server as if
   * the user had opened it), and a scheme the client does not sync through VS Code.
   */
  private async readDefinitionTarget(uri: vscode.Uri): Promise<TextLines> {
    const key = uri.toString();
    let document = vscode.workspace.textDocuments.find((open) => open.uri.toString() === key);
    if (document === undefined && uri.scheme === 'file') {
      const stat = await vscode.workspace.fs.stat(uri);
      if (stat.size > MAX_FILE_BYTES) {
        throw new Error(`${key} is larger than ${MAX_FILE_BYTES} bytes`);
      }
      return textLines(new TextDecoder().decode(await vscode.workspace.fs.readFile(uri)));
    }
    if (document === undefined && uri.scheme === 'untitled') {
      throw new Error(`${key} is not open`); // a closed untitled editor: opening it would make a new one
    }
    document ??= await vscode.workspace.openTextDocument(uri);
    const lines = document;
    return { lineCount: lines.lineCount, line: (index) => lines.lineAt(index).text };
  }

  // -- lspInfer/suggestionReady: a better suggestion where the cursor rests ------------------

  /**
   * After a cold start the server has the whole window's suggestion where it answered (most
   * often nothing): inline suggestions are asked for again there, if the user is still there
   * and they are on. A malformed notification, or one from an old server, is ignored.
   */
  private onSuggestionReady(generation: number, params: unknown): void {
    const ready = parseSuggestionReady(params);
    const editor = vscode.window.activeTextEditor;
    if (ready === undefined || generation !== this.generation || this.disposed || editor === undefined) {
      return;
    }
    if (!cursorRestsAt(ready, editorView(editor)) || !this.inlineSuggestionsOn(editor.document)) {
      return; // the user moved on (or sees no inline suggestions): nothing to show
    }
    this.output.debug(`${SUGGESTION_READY_METHOD}: asking again at ${ready.position.line}:${ready.position.character} of ${ready.uri}`);
    this.reAsk.expect(ready);
    vscode.commands.executeCommand(TRIGGER_INLINE_SUGGEST).then(undefined, (error: unknown) => {
      this.reAsk.clear();
      this.output.debug(`${TRIGGER_INLINE_SUGGEST}: ${errorMessage(error)}`);
    });
  }

  /** lsp-infer's completions, and VS Code's inline suggestions for this document (its language's value). */
  private inlineSuggestionsOn(document: vscode.TextDocument): boolean {
    return this.state.enabled && vscode.workspace.getConfiguration('editor', document).get<boolean>('inlineSuggest.enabled', true) !== false;
  }

  /**
   * The context a request goes to the server with: the request VS Code makes for the
   * extension's re-ask comes as Invoke (the trigger command's kind), and goes as Automatic, as
   * typing's would (the server answers it from its cache, held to completion.minConfidence).
   */
  private reAskContext(document: vscode.TextDocument, position: vscode.Position, context: vscode.InlineCompletionContext): vscode.InlineCompletionContext {
    const reAsked = this.reAsk.take({ uri: document.uri.toString(), version: document.version, position });
    const invoked = context.triggerKind === vscode.InlineCompletionTriggerKind.Invoke;
    return reAsked && invoked ? { ...context, triggerKind: vscode.InlineCompletionTriggerKind.Automatic } : context;
  }

  // -- next-edit suggestions (lspInfer/nextEdit) ---------------------------------------------

  /**
   * A document changed. A next edit drawn for it is stale (rejected: it was computed for the
   * version before). An edit of the active editor's document starts the pause after which the
   * server is asked (and cancels the request in flight: its answer would be for an old version).
   * Changes without content (the dirty flag, a save) are not edits.
   */
  private onDocumentChanged(event: vscode.TextDocumentChangeEvent): void {
    if (event.contentChanges.length === 0) {
      return;
    }
    const document = event.document;
    this.report(this.nextEdits.edited({ uri: document.uri.toString(), version: document.version }));
    this.syncNextEditDrawing();
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined || editor.document !== document) {
      return; // another document (a background format, another editor's): not where the user is
    }
    this.stopAskingNextEdit();
    if (!this.canAskNextEdit(document)) {
      return;
    }
    const version = document.version;
    this.cancelNextEditPause = this.schedule(() => {
      this.cancelNextEditPause = undefined;
      void this.askNextEdit(editor, version);
    }, NEXT_EDIT_PAUSE_MS);
  }

  /** A running server, a document it syncs, and lspInfer.nextEdit.enabled on. */
  private canAskNextEdit(document: vscode.TextDocument): boolean {
    const client = this.client;
    return (
      client !== undefined &&
      client.isRunning() &&
      !this.disposed &&
      vscode.languages.match(DOCUMENT_SELECTOR, document) > 0 &&
      this.nextEditEnabled(document.uri)
    );
  }

  /** Drop the pending pause and cancel the request in flight. */
  private stopAskingNextEdit(): void {
    this.cancelNextEditPause?.();
    this.cancelNextEditPause = undefined;
    this.nextEditRequest?.cancel();
    this.nextEditRequest = undefined;
  }

  /**
   * The pause is over: ask the server at the cursor, for the version the pause began at. The
   * answer is drawn only if that editor is still the active one with its document at that
   * version (an edit since cancels the request, and would make the answer's ranges wrong).
   */
  private async askNextEdit(editor: vscode.TextEditor, version: number): Promise<void> {
    const client = this.client;
    const generation = this.generation;
    const document = editor.document;
    if (client === undefined || editor !== vscode.window.activeTextEditor || document.version !== version || !this.canAskNextEdit(document)) {
      return;
    }
    const uri = document.uri.toString();
    const source = new vscode.CancellationTokenSource();
    this.nextEditRequest = source;
    const params = nextEditParams(uri, version, client.code2ProtocolConverter.asPosition(editor.selection.active));
    let result: unknown;
    try {
      result = await client.sendRequest(NEXT_EDIT_METHOD, params, source.token);
    } catch (error) {
      // Cancelled by the next edit (RequestCancelled), or an older server without the method:
      // nothing to show, and nothing the user must hear about on every pause.
      if (!source.token.isCancellationRequested) {
        this.output.debug(`${NEXT_EDIT_METHOD}: ${errorMessage(error)}`);
      }
      return;
    } finally {
      if (this.nextEditRequest === source) {
        this.nextEditRequest = undefined;
      }
      source.dispose();
    }
    if (source.token.isCancellationRequested || generation !== this.generation || this.disposed) {
      return;
    }
    const suggestion = parseNextEdit(result, uri);
    if (suggestion === undefined) {
      return;
    }
    const active = vscode.window.activeTextEditor;
    const now = active === editor ? { uri: active.document.uri.toString(), version: active.document.version } : undefined;
    if (!fits(suggestion, { uri, version }, now)) {
      this.output.debug(`${NEXT_EDIT_METHOD}: ${suggestion.id} answered for version ${suggestion.version}; the document moved on`);
      return;
    }
    this.showNextEdit(editor, suggestion);
  }

  /** Draw it, then tell the server it is shown (and the one it replaces, if any, rejected). */
  private showNextEdit(editor: vscode.TextEditor, suggestion: NextEdit): void {
    if (this.nextEditEditor !== undefined && this.nextEditEditor !== editor) {
      this.clearNextEditDecorations(this.nextEditEditor);
    }
    this.nextEditEditor = editor;
    this.drawNextEdit(editor, suggestion);
    this.report(this.nextEdits.show(suggestion));
    this.output.debug(`${NEXT_EDIT_METHOD}: showing ${suggestion.id} (${suggestion.kind ?? 'unknown kind'}): ${suggestion.label ?? ''}`);
  }

  private drawNextEdit(editor: vscode.TextEditor, suggestion: NextEdit): void {
    const cursor = editor.selection.active;
    const visibleLines = editor.visibleRanges.map((range) => ({ start: range.start.line, end: range.end.line }));
    const revealed = this.nextEditRevealedLine;
    const drawn = drawing(suggestion, {
      cursor,
      visibleLines: revealed === undefined ? visibleLines : [...visibleLines, { start: revealed, end: revealed }],
    });
    const position = (at: { line: number; character: number }) => new vscode.Position(at.line, at.character);
    const ghostColor = new vscode.ThemeColor('editorGhostText.foreground');
    editor.setDecorations(
      this.nextEditStyles.removed,
      drawn.removed.map((range) => new vscode.Range(position(range.start), position(range.end))),
    );
    editor.setDecorations(
      this.nextEditStyles.inserted,
      drawn.inserted.map((ghost) => ({
        range: new vscode.Range(position(ghost.at), position(ghost.at)),
        renderOptions: { after: { contentText: ghost.text, color: ghostColor } },
      })),
    );
    const hint = drawn.hint;
    editor.setDecorations(
      this.nextEditStyles.hint,
      hint === undefined
        ? []
        : [
            {
              // The end of the cursor's line.
              range: new vscode.Range(hint.line, editor.document.lineAt(hint.line).text.length, hint.line, editor.document.lineAt(hint.line).text.length),
              renderOptions: { after: { contentText: hint.text } },
            },
          ],
    );
    this.setNextEditVisible(true);
  }

  /** The cursor moved or the editor scrolled: the hint may come, go or move. */
  private redrawNextEdit(editor: vscode.TextEditor): void {
    const suggestion = this.nextEdits.current;
    if (suggestion !== undefined && editor === this.nextEditEditor) {
      this.drawNextEdit(editor, suggestion);
    }
  }

  private clearNextEditDecorations(editor: vscode.TextEditor): void {
    for (const style of Object.values(this.nextEditStyles)) {
      editor.setDecorations(style, []);
    }
  }

  /** After the tracker dropped the suggestion (rejected, taken, reset): take it off the screen. */
  private syncNextEditDrawing(): void {
    if (this.nextEdits.current !== undefined) {
      return;
    }
    if (this.nextEditEditor !== undefined) {
      this.clearNextEditDecorations(this.nextEditEditor);
      this.nextEditEditor = undefined;
    }
    this.nextEditRevealedLine = undefined;
    this.setNextEditVisible(false);
  }

  /** The `lspInfer.nextEditVisible` context key, which enables the Tab and Escape keybindings. */
  private setNextEditVisible(visible: boolean): void {
    if (visible === this.nextEditVisible) {
      return;
    }
    this.nextEditVisible = visible;
    vscode.commands.executeCommand('setContext', NEXT_EDIT_CONTEXT_KEY, visible).then(undefined, (error: unknown) => {
      this.output.debug(`setContext ${NEXT_EDIT_CONTEXT_KEY}: ${errorMessage(error)}`);
    });
  }

  /** Another editor came to the front: the next edit drawn in the one before is rejected. */
  private nextEditEditorChanged(editor: vscode.TextEditor | undefined): void {
    this.stopAskingNextEdit();
    if (this.nextEditEditor !== undefined && editor !== this.nextEditEditor) {
      this.report(this.nextEdits.reject());
      this.syncNextEditDrawing();
    }
  }

  /**
   * Tab while a next edit is shown (the keybinding's `when`): go to it when the cursor is not
   * on its first edit's lines, else apply the whole group as one edit (one undo step), if the
   * document is still at the suggestion's version. With nothing to do (the context key was a
   * moment late), Tab is VS Code's own.
   */
  async acceptNextEdit(): Promise<void> {
    const suggestion = this.nextEdits.current;
    const editor = this.nextEditEditor;
    if (suggestion === undefined || editor === undefined || editor !== vscode.window.activeTextEditor) {
      await vscode.commands.executeCommand('tab');
      return;
    }
    const document = editor.document;
    if (document.version !== suggestion.version) {
      this.report(this.nextEdits.reject()); // stale: never applied to another version
      this.syncNextEditDrawing();
      return;
    }
    const first = suggestion.edits[0].range;
    if (tabAction(suggestion, editor.selection.active) === 'jump') {
      const start = new vscode.Position(first.start.line, first.start.character);
      this.nextEditRevealedLine = first.start.line;
      editor.selection = new vscode.Selection(start, start);
      editor.revealRange(new vscode.Range(start, new vscode.Position(first.end.line, first.end.character)), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      this.redrawNextEdit(editor);
      return;
    }
    // Off the screen first: the edit's own document change must not reject it.
    this.nextEdits.take();
    this.syncNextEditDrawing();
    const edit = new vscode.WorkspaceEdit();
    for (const { range, text } of suggestion.edits) {
      edit.replace(document.uri, new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character), text);
    }
    let applied = false;
    try {
      // VS Code refuses the edit if the document changed since the extension host saw it.
      applied = await vscode.workspace.applyEdit(edit);
    } catch (error) {
      this.output.warn(`Could not apply the next edit ${suggestion.id}: ${errorMessage(error)}`);
    }
    if (!applied) {
      this.output.debug(`${NEXT_EDIT_METHOD}: ${suggestion.id} was not applied (the document changed?)`);
    }
    this.report([applied ? accepted(suggestion.id) : rejected(suggestion.id)]);
  }

  /** Escape while a next edit is shown: it goes, rejected. */
  dismissNextEdit(): void {
    this.report(this.nextEdits.reject());
    this.syncNextEditDrawing();
  }

  // -- the suggestion lifecycle -------------------------------------------------------------

  /** Tell the server what became of its suggestions (notifications; nothing waits for them). */
  private report(messages: readonly ServerMessage[]): void {
    const client = this.client;
    if (messages.length === 0 || client === undefined || !client.isRunning()) {
      return;
    }
    for (const message of messages) {
      client.sendNotification(message.method, message.params).catch((error: unknown) => {
        this.output.debug(`Could not send ${message.method}: ${errorMessage(error)}`);
      });
    }
  }

  /**
   * VS Code's Accept Next Word / Line (bound to its keys while a suggestion is shown), then
   * how much of the shown suggestion is in the document now (a partial accept).
   */
  async acceptNext(part: 'word' | 'line'): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const version = editor?.document.version;
    const changed = editor === undefined ? undefined : this.nextChange(editor.document);
    await vscode.commands.executeCommand(ACCEPT_NEXT[part]);
    if (editor === undefined || changed === undefined) {
      return;
    }
    const document = editor.document;
    if (document.version === version) {
      await changed; // the edit can reach the extension host after the command's answer
    }
    this.report(
      this.tracker.partlyAccepted(document.uri.toString(), (start) => {
        const cursor = editor.selection.active;
        return document.offsetAt(cursor) >= start ? document.getText(new vscode.Range(document.positionAt(start), cursor)) : undefined;
      }),
    );
  }

  /** Resolves at the document's next change, or after a moment without one. */
  private nextChange(document: vscode.TextDocument): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        listener.dispose();
        cancel();
        resolve();
      };
      const listener = vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.document === document) {
          done();
        }
      });
      const cancel = this.schedule(done, 250);
    });
  }

  async setTeamApiKey(): Promise<void> {
    const key = await vscode.window.showInputBox({
      title: 'lsp-infer: Team API Key',
      prompt: "API key for the team server (lspInfer.team.url). Kept in VS Code's secret storage; empty removes it.",
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) {
      return;
    }
    if (key.trim() === '') {
      await this.context.secrets.delete(API_KEY_SECRET);
      this.output.info('Team API key removed');
    } else {
      await this.context.secrets.store(API_KEY_SECRET, key.trim());
      this.output.info('Team API key stored');
    }
    // secrets.onDidChange reloads it and tells the server; do it here too in case that fires late.
    await this.loadApiKey();
    this.notifyServer();
  }

  async showMenu(): Promise<void> {
    const items = menuItems({
      enabled: this.state.enabled,
      serverRunning: this.client?.isRunning() ?? false,
      hasActiveFile: vscode.window.activeTextEditor !== undefined,
      canRefactor: await this.serverOffers(SERVER_COMMANDS.refactorFile),
    });
    const picked = await vscode.window.showQuickPick(items, { title: render(this.state).tooltip.split('\n')[0] });
    if (picked !== undefined) {
      await vscode.commands.executeCommand(picked.command);
    }
  }

  private schedule(run: () => void, ms: number): () => void {
    if (this.options.schedule !== undefined) {
      return this.options.schedule(run, ms);
    }
    const timer = setTimeout(run, ms);
    return () => clearTimeout(timer);
  }

  // -- messages ---------------------------------------------------------------------------

  private async offer(choice: Thenable<string | undefined>, setting = 'lspInfer.server'): Promise<void> {
    const picked = await choice;
    if (picked === OPEN_SETTINGS) {
      await vscode.commands.executeCommand('workbench.action.openSettings', setting);
    } else if (picked === SHOW_OUTPUT) {
      this.output.show(true);
    }
  }

  private async offerRestart(choice: Thenable<string | undefined>): Promise<void> {
    const picked = await choice;
    if (picked === RESTART) {
      await this.restart(true);
    } else if (picked !== undefined) {
      await this.offer(Promise.resolve(picked));
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.cancelRestart?.();
    this.cancelStatsRefresh?.();
    this.cancelWarm?.();
    this.cancelWarm = undefined;
    this.reAsk.clear();
    this.stopAskingNextEdit();
    this.nextEdits.reset();
    this.syncNextEditDrawing();
    this.statsPanel?.dispose();
    await this.queue.catch(() => undefined);
    await this.stopClient();
    for (const disposable of this.disposables.splice(0)) {
      disposable.dispose();
    }
  }
}

let extension: Extension | undefined;

export async function activate(context: vscode.ExtensionContext, options?: ExtensionOptions): Promise<Extension> {
  extension = new Extension(context, options);
  await extension.activate();
  return extension;
}

export async function deactivate(): Promise<void> {
  const current = extension;
  extension = undefined;
  await current?.dispose();
}
