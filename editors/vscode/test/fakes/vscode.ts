/**
 * A small stand-in for the `vscode` module: just what src/extension.ts uses, recording what
 * the extension does (messages, commands, status bar, output, settings writes) for tests.
 */
import * as path from 'node:path';

type Listener<T> = (event: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(event: T): void {
    for (const listener of [...this.listeners]) {
      listener(event);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static file(file: string): Uri {
    return new Uri('file', file);
  }
  static parse(value: string): Uri {
    const match = /^([a-z-]+):(?:\/\/)?(.*)$/.exec(value);
    return match ? new Uri(match[1], match[2].startsWith('/') ? match[2] : `/${match[2]}`) : new Uri('file', value);
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return this.scheme === 'file' ? `file://${this.path}` : `${this.scheme}:${this.path}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  /** As VS Code's: two positions, or four numbers. */
  constructor(start: Position | number, end: Position | number, endLine?: number, endCharacter?: number) {
    if (typeof start === 'number' && typeof end === 'number') {
      this.start = new Position(start, end);
      this.end = new Position(endLine ?? start, endCharacter ?? end);
    } else {
      this.start = start as Position;
      this.end = end as Position;
    }
  }
}

/** A selection: from `anchor` to `active` (the cursor). */
export class Selection extends Range {
  constructor(
    readonly anchor: Position,
    readonly active: Position,
  ) {
    super(anchor, active);
  }
}

export enum TextEditorRevealType {
  Default = 0,
  InCenter = 1,
  InCenterIfOutsideViewport = 2,
  AtTop = 3,
}

/** A WorkspaceEdit of replacements (what the extension uses), in the order given. */
export class WorkspaceEdit {
  readonly replacements: { uri: Uri; range: Range; text: string }[] = [];
  replace(uri: Uri, range: Range, text: string): void {
    this.replacements.push({ uri, range, text });
  }
}

export class CancellationTokenSource {
  disposed = false;
  private listeners: (() => void)[] = [];
  readonly token = {
    isCancellationRequested: false,
    onCancellationRequested: (listener: () => void) => {
      this.listeners.push(listener);
      return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
    },
  };
  cancel(): void {
    if (!this.token.isCancellationRequested) {
      this.token.isCancellationRequested = true;
      for (const listener of [...this.listeners]) {
        listener();
      }
    }
  }
  dispose(): void {
    this.disposed = true;
  }
}

/** A decoration type: its options, and whether it was disposed. */
export class FakeDecorationType {
  static count = 0;
  readonly key = `decoration-${++FakeDecorationType.count}`;
  disposed = false;
  /** As the extension gave them (any: tests read nested fields such as `after.color.id`). */
  constructor(readonly options: Record<string, any>) {}
  dispose(): void {
    this.disposed = true;
  }
}

/** A text document over a string: offsets and positions as VS Code counts them (UTF-16). */
export class FakeDocument {
  version = 1;
  constructor(
    readonly uri: Uri,
    public text: string,
    readonly languageId = 'python',
  ) {}
  offsetAt(position: Position): number {
    const lines = this.text.split('\n');
    let offset = 0;
    for (let i = 0; i < position.line && i < lines.length; i++) {
      offset += lines[i].length + 1;
    }
    return offset + Math.min(position.character, lines[position.line]?.length ?? 0);
  }
  positionAt(offset: number): Position {
    const before = this.text.slice(0, offset).split('\n');
    return new Position(before.length - 1, before[before.length - 1].length);
  }
  getText(range?: Range): string {
    return range === undefined ? this.text : this.text.slice(this.offsetAt(range.start), this.offsetAt(range.end));
  }
  get lineCount(): number {
    return this.text.split('\n').length;
  }
  lineAt(line: number): { text: string } {
    return { text: this.text.split('\n')[line] ?? '' };
  }
}

/** A webview panel: the HTML it was given, and whether it is visible or disposed. */
export class FakePanel {
  html = '';
  visible = true;
  disposed = false;
  reveals = 0;
  readonly disposeEmitter = new EventEmitter<void>();
  readonly webview = {
    cspSource: 'vscode-webview://fake',
    options: {} as unknown,
    get html(): string {
      return this.owner.html;
    },
    set html(value: string) {
      this.owner.html = value;
    },
    owner: this as FakePanel,
  };
  constructor(
    readonly viewType: string,
    readonly title: string,
    readonly options: unknown,
  ) {}
  onDidDispose = this.disposeEmitter.event;
  reveal(): void {
    this.reveals += 1;
    this.visible = true;
  }
  dispose(): void {
    if (!this.disposed) {
      this.disposed = true;
      this.disposeEmitter.fire();
    }
  }
}

interface DocumentFilter {
  scheme?: string;
  language?: string;
}

/** vscode.languages.match for filters of scheme and language (10 when one matches, else 0). */
export function match(selector: string | DocumentFilter | readonly (string | DocumentFilter)[], document: { uri: Uri; languageId?: string }): number {
  const filters = Array.isArray(selector) ? selector : [selector];
  const matches = (filter: string | DocumentFilter) =>
    typeof filter === 'string'
      ? filter === document.languageId
      : (filter.scheme === undefined || filter.scheme === document.uri.scheme) && (filter.language === undefined || filter.language === document.languageId);
  return filters.some(matches) ? 10 : 0;
}

export enum TextEditorSelectionChangeKind {
  Keyboard = 1,
  Mouse = 2,
  Command = 3,
}

/** VS Code's values (vscode.d.ts): how an inline completion request was triggered. */
export enum InlineCompletionTriggerKind {
  Invoke = 0,
  Automatic = 1,
}

/** An editor over a FakeDocument, its cursor at `active` (a selection when `anchor` is elsewhere). */
export class FakeEditor {
  selection: { active: Position; anchor?: Position };
  /** More cursors after the primary one (multi-cursor editing). */
  moreSelections: { anchor: Position; active: Position }[] = [];
  /** The lines on screen (VS Code's visibleRanges). */
  visibleRanges: Range[] = [new Range(0, 0, 40, 0)];
  /** What is drawn: the decorations last set per type. */
  readonly decorations = new Map<FakeDecorationType, unknown[]>();
  readonly revealed: { range: Range; type: TextEditorRevealType | undefined }[] = [];
  constructor(
    readonly document: FakeDocument,
    active: Position = new Position(0, 0),
  ) {
    this.selection = { active };
  }
  setDecorations(type: FakeDecorationType, decorations: unknown[]): void {
    this.decorations.set(type, [...decorations]);
  }
  revealRange(range: Range, type?: TextEditorRevealType): void {
    this.revealed.push({ range, type });
  }
  get selections(): { anchor: Position; active: Position }[] {
    const { active, anchor = active } = this.selection;
    return [{ anchor, active }, ...this.moreSelections];
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
  WorkspaceFolder = 3,
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

interface Scopes {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

export interface Message {
  readonly kind: 'error' | 'warning' | 'info';
  readonly text: string;
  readonly actions: string[];
}

/** Everything the fake records, and the knobs a test turns. */
export class FakeVscode {
  readonly defaults = new Map<string, unknown>();
  readonly settings = new Map<string, Scopes>();
  readonly commands = new Map<string, (...args: unknown[]) => unknown>();
  readonly executed: { command: string; args: unknown[] }[] = [];
  readonly messages: Message[] = [];
  readonly log: string[] = [];
  readonly secrets = new Map<string, string>();
  readonly workspaceState = new Map<string, unknown>();
  /** Answers for showInputBox / showQuickPick / message buttons, consumed in order. */
  readonly inputs: (string | undefined)[] = [];
  readonly picks: ((items: { label: string }[]) => { label: string } | undefined)[] = [];
  readonly buttons: (string | undefined)[] = [];
  readonly quickPicks: { items: { label: string; description?: string }[]; title?: string }[] = [];
  readonly inputBoxes: { title?: string; password?: boolean; value?: string }[] = [];
  readonly statusItem = { name: '', text: '', tooltip: '' as unknown, command: undefined as unknown, backgroundColor: undefined as ThemeColor | undefined, visible: false, show() { this.visible = true; }, hide() { this.visible = false; }, dispose() {} };
  readonly configChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();
  readonly activeEditorChanged = new EventEmitter<unknown>();
  readonly selectionChanged = new EventEmitter<{ textEditor: unknown; selections: unknown[]; kind: TextEditorSelectionChangeKind | undefined }>();
  readonly documentClosed = new EventEmitter<{ uri: Uri }>();
  readonly documentChanged = new EventEmitter<{ document: unknown; contentChanges: unknown[] }>();
  readonly visibleRangesChanged = new EventEmitter<{ textEditor: unknown; visibleRanges: unknown[] }>();
  readonly decorationTypes: FakeDecorationType[] = [];
  /** workspace.applyEdit's edits; a test sets `applyEditFails` to make VS Code refuse them. */
  readonly appliedEdits: WorkspaceEdit[] = [];
  applyEditFails = false;
  readonly panels: FakePanel[] = [];
  readonly secretsChanged = new EventEmitter<{ key: string }>();
  workspaceFolders: { uri: Uri; name: string; index: number }[] | undefined = [{ uri: Uri.file('/work/proj'), name: 'proj', index: 0 }];
  textDocuments: { uri: Uri; isClosed: boolean }[] = [];
  /** Files on "disk" for workspace.fs (path → text); reads are recorded. */
  readonly files = new Map<string, string>();
  readonly fileReads: string[] = [];
  /** Documents opened with workspace.openTextDocument (what the extension should not do for a file). */
  readonly openedDocuments: string[] = [];
  activeTextEditor: { document: { uri: Uri }; selection?: { active: Position } } | undefined;
  readonly module: Record<string, unknown>;

  constructor(packageJson: { contributes: { configuration: { properties: Record<string, { default?: unknown }> }[] } }) {
    for (const group of packageJson.contributes.configuration) {
      for (const [key, prop] of Object.entries(group.properties)) {
        this.defaults.set(key, prop.default);
      }
    }
    this.module = this.build();
  }

  /** Make `editor` the active one, as switching to its tab does. */
  switchTo(editor: FakeEditor | undefined): void {
    this.activeTextEditor = editor;
    this.activeEditorChanged.fire(editor);
  }

  /** Move the cursor of `editor` (kind: how; an edit moves it with the version already bumped). */
  moveCursor(editor: FakeEditor, active: Position, kind: TextEditorSelectionChangeKind | undefined = TextEditorSelectionChangeKind.Keyboard): void {
    editor.selection = { active };
    this.selectionChanged.fire({ textEditor: editor, selections: [editor.selection], kind });
  }

  /** Type `text` at the cursor the way VS Code reports it: the document change, then the cursor move. */
  type(editor: FakeEditor, text: string): void {
    const document = editor.document;
    const offset = document.offsetAt(editor.selection.active);
    document.text = document.text.slice(0, offset) + text + document.text.slice(offset);
    document.version += 1;
    this.documentChanged.fire({ document, contentChanges: [{ text }] });
    this.moveCursor(editor, document.positionAt(offset + text.length));
  }

  /**
   * Apply a WorkspaceEdit to the active editor's document, as VS Code does (one change event,
   * one version), or refuse it (false) when `applyEditFails` or it is for another document.
   */
  applyEdit(edit: WorkspaceEdit): boolean {
    const editor = this.activeTextEditor as FakeEditor | undefined;
    const document = editor?.document;
    if (this.applyEditFails || document === undefined || edit.replacements.some((r) => r.uri.toString() !== document.uri.toString())) {
      return false;
    }
    this.appliedEdits.push(edit);
    // From the last to the first, so that earlier offsets stay valid.
    const spans = edit.replacements.map((r) => ({ from: document.offsetAt(r.range.start), to: document.offsetAt(r.range.end), text: r.text }));
    for (const span of [...spans].sort((a, b) => b.from - a.from)) {
      document.text = document.text.slice(0, span.from) + span.text + document.text.slice(span.to);
    }
    document.version += 1;
    this.documentChanged.fire({ document, contentChanges: spans });
    return true;
  }

  /** Scroll `editor` so that these lines are on screen. */
  scroll(editor: FakeEditor, start: number, end: number): void {
    editor.visibleRanges = [new Range(start, 0, end, 0)];
    this.visibleRangesChanged.fire({ textEditor: editor, visibleRanges: editor.visibleRanges });
  }

  /** Write a setting the way the settings editor would, firing onDidChangeConfiguration. */
  set(key: string, value: unknown, scope: keyof Scopes = 'globalValue'): void {
    const scopes = { ...(this.settings.get(key) ?? {}) };
    scopes[scope] = value;
    this.settings.set(key, scopes);
    this.configChanged.fire({ affectsConfiguration: (section) => key === section || key.startsWith(section + '.') });
  }

  effective(key: string): unknown {
    const scopes = this.settings.get(key) ?? {};
    for (const value of [scopes.workspaceFolderValue, scopes.workspaceValue, scopes.globalValue]) {
      if (value !== undefined) {
        return value;
      }
    }
    return this.defaults.get(key);
  }

  private message(kind: Message['kind']) {
    return (text: string, ...actions: string[]) => {
      this.messages.push({ kind, text, actions });
      return Promise.resolve(this.buttons.shift());
    };
  }

  private build(): Record<string, unknown> {
    const fake = this;
    const channel = {
      logLevel: 2,
      onDidChangeLogLevel: new EventEmitter<number>().event,
      name: 'lsp-infer',
      shown: false,
      append: (text: string) => fake.log.push(`append ${text}`),
      appendLine: (text: string) => fake.log.push(`line ${text}`),
      replace: (text: string) => fake.log.push(`replace ${text}`),
      clear: () => undefined,
      show: () => {
        channel.shown = true;
      },
      hide: () => undefined,
      dispose: () => undefined,
      trace: (text: string) => fake.log.push(`trace ${text}`),
      debug: (text: string) => fake.log.push(`debug ${text}`),
      info: (text: string) => fake.log.push(`info ${text}`),
      warn: (text: string) => fake.log.push(`warn ${text}`),
      error: (text: string | Error) => fake.log.push(`error ${String(text)}`),
    };
    this.channel = channel;
    const getConfiguration = (section?: string) => {
      const full = (key: string) => (section ? `${section}.${key}` : key);
      return {
        get: (key: string, fallback?: unknown) => {
          const value = fake.effective(full(key));
          return value === undefined ? fallback : value;
        },
        has: (key: string) => fake.effective(full(key)) !== undefined,
        inspect: (key: string) => ({ key: full(key), defaultValue: fake.defaults.get(full(key)), ...(fake.settings.get(full(key)) ?? {}) }),
        update: async (key: string, value: unknown, target: ConfigurationTarget) => {
          const scope = target === ConfigurationTarget.WorkspaceFolder ? 'workspaceFolderValue' : target === ConfigurationTarget.Workspace ? 'workspaceValue' : 'globalValue';
          fake.set(full(key), value, scope);
        },
      };
    };
    return {
      Uri,
      ThemeColor,
      EventEmitter,
      ConfigurationTarget,
      StatusBarAlignment,
      Position,
      Range,
      Selection,
      WorkspaceEdit,
      CancellationTokenSource,
      TextEditorRevealType,
      TextEditorSelectionChangeKind,
      InlineCompletionTriggerKind,
      languages: { match },
      ViewColumn: { Active: -1, Beside: -2, One: 1 },
      window: {
        onDidChangeActiveTextEditor: this.activeEditorChanged.event,
        onDidChangeTextEditorSelection: this.selectionChanged.event,
        onDidChangeTextEditorVisibleRanges: this.visibleRangesChanged.event,
        createTextEditorDecorationType: (options: Record<string, unknown>) => {
          const type = new FakeDecorationType(options);
          fake.decorationTypes.push(type);
          return type;
        },
        createWebviewPanel: (viewType: string, title: string, _column: unknown, options: unknown) => {
          const panel = new FakePanel(viewType, title, options);
          fake.panels.push(panel);
          return panel;
        },
        createOutputChannel: () => channel,
        createStatusBarItem: () => fake.statusItem,
        showErrorMessage: this.message('error'),
        showWarningMessage: this.message('warning'),
        showInformationMessage: this.message('info'),
        setStatusBarMessage: (text: string) => {
          fake.log.push(`statusbar ${text}`);
          return { dispose() {} };
        },
        showInputBox: async (options: { title?: string; password?: boolean; value?: string }) => {
          fake.inputBoxes.push(options);
          return fake.inputs.shift();
        },
        showQuickPick: async (items: { label: string; description?: string }[], options?: { title?: string }) => {
          fake.quickPicks.push({ items, title: options?.title });
          const pick = fake.picks.shift();
          return pick ? pick(items) : undefined;
        },
        get activeTextEditor() {
          return fake.activeTextEditor;
        },
      },
      workspace: {
        getConfiguration,
        onDidChangeConfiguration: this.configChanged.event,
        onDidCloseTextDocument: this.documentClosed.event,
        onDidChangeTextDocument: this.documentChanged.event,
        applyEdit: async (edit: WorkspaceEdit) => fake.applyEdit(edit),
        get workspaceFolders() {
          return fake.workspaceFolders;
        },
        get textDocuments() {
          return fake.textDocuments;
        },
        fs: {
          stat: async (uri: Uri) => {
            const text = fake.files.get(uri.path);
            if (text === undefined) {
              throw new Error(`ENOENT: ${uri.path}`);
            }
            return { size: Buffer.byteLength(text), type: 1, ctime: 0, mtime: 0 };
          },
          readFile: async (uri: Uri) => {
            fake.fileReads.push(uri.path);
            const text = fake.files.get(uri.path);
            if (text === undefined) {
              throw new Error(`ENOENT: ${uri.path}`);
            }
            return new Uint8Array(Buffer.from(text, 'utf8'));
          },
        },
        openTextDocument: async (uri: Uri) => {
          fake.openedDocuments.push(uri.toString());
          const text = fake.files.get(uri.path);
          if (text === undefined) {
            throw new Error(`cannot open ${uri.toString()}`);
          }
          return new FakeDocument(uri, text);
        },
      },
      commands: {
        registerCommand: (id: string, run: (...args: unknown[]) => unknown) => {
          if (fake.commands.has(id)) {
            throw new Error(`command '${id}' already exists`);
          }
          fake.commands.set(id, run);
          return { dispose: () => fake.commands.delete(id) };
        },
        executeCommand: async (command: string, ...args: unknown[]) => {
          fake.executed.push({ command, args });
          return fake.commands.get(command)?.(...args);
        },
        getCommands: async () => [...fake.commands.keys()],
      },
    };
  }

  channel: { shown: boolean } | undefined;

  /** An ExtensionContext over the fake's secret and workspace-state maps. */
  context(): unknown {
    const fake = this;
    return {
      subscriptions: [],
      extensionPath: path.join(__dirname, '..', '..', '..'),
      secrets: {
        get: async (key: string) => fake.secrets.get(key),
        store: async (key: string, value: string) => {
          fake.secrets.set(key, value);
          fake.secretsChanged.fire({ key });
        },
        delete: async (key: string) => {
          fake.secrets.delete(key);
          fake.secretsChanged.fire({ key });
        },
        onDidChange: this.secretsChanged.event,
      },
      workspaceState: {
        get: (key: string) => fake.workspaceState.get(key),
        update: async (key: string, value: unknown) => void fake.workspaceState.set(key, value),
      },
    };
  }
}
