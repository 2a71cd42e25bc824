/**
 * src/extension.ts with the REAL vscode-languageclient, against a fake server process
 * (test/fixtures/fakeServer.ts) over stdio. Only `vscode` is stubbed (test/fakes/vscode.ts, plus
 * inert defaults for the APIs the client touches). Checks what actually goes over the wire:
 * the inlineCompletion capability, initializationOptions, workspace/configuration answers,
 * didChangeConfiguration, and that the inline provider's requests reach the server.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { FakeDocument, FakeVscode, Uri } from './fakes/vscode';

const ROOT = path.join(__dirname, '..', '..');
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const SERVER = path.join(__dirname, 'fixtures', 'fakeServer.js');
const API_KEY = 'sk-integration-0123456789';

const disposable = () => ({ dispose() {} });
/** A function usable as an event, a registration, or a class (everything the client may call). */
function inert(): unknown {
  return function () {
    return disposable();
  };
}
/** `target`'s own members, and an inert one for anything else. */
function withDefaults<T extends object>(target: T): T {
  return new Proxy(target, {
    get(object, property) {
      if (property in object || typeof property === 'symbol' || property === 'then') {
        return Reflect.get(object, property);
      }
      return inert();
    },
  });
}
class Base {
  readonly args: unknown[];
  constructor(...args: unknown[]) {
    this.args = args;
  }
}
class Disposable {
  constructor(private readonly callOnDispose: () => void = () => undefined) {}
  static from(...items: { dispose(): unknown }[]) {
    return new Disposable(() => items.forEach((item) => item.dispose()));
  }
  dispose() {
    this.callOnDispose();
  }
}

let fake: FakeVscode;
let logFile: string;
let inlineProvider: { provideInlineCompletionItems: (...args: unknown[]) => Promise<unknown> } | undefined;
let completionProvider: { provideCompletionItems: (...args: unknown[]) => unknown } | undefined;
/** Reference providers the client registered (none: lsp-infer offers no references). */
let referenceProviders = 0;
let loaded: typeof import('../src/extension');
let extension: import('../src/extension').Extension;

function vscodeModule(): object {
  const base = fake.module as Record<string, any>;
  const classes = new Map<PropertyKey, unknown>();
  return new Proxy(
    {
      ...base,
      version: '1.91.0',
      Disposable,
      LogLevel: { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 },
      // VS Code's values (vscode.d.ts): the client maps them to LSP's Invoked (1) / Automatic (2).
      InlineCompletionTriggerKind: { Invoke: 0, Automatic: 1 },
      InlineCompletionList: class {
        constructor(readonly items: unknown[]) {}
      },
      InlineCompletionItem: class {
        constructor(
          readonly insertText: unknown,
          readonly range?: unknown,
          readonly command?: unknown,
        ) {}
      },
      env: withDefaults({ appName: 'Visual Studio Code', language: 'en', machineId: 'test', sessionId: 'test', uriScheme: 'vscode' }),
      window: withDefaults({
        ...base.window,
        get activeTextEditor() {
          return fake.activeTextEditor;
        },
        visibleTextEditors: [],
        tabGroups: { all: [], onDidChangeTabs: inert() },
      }),
      workspace: withDefaults({
        getConfiguration: base.workspace.getConfiguration,
        onDidChangeConfiguration: base.workspace.onDidChangeConfiguration,
        workspaceFolders: base.workspace.workspaceFolders,
        get textDocuments() {
          return fake.textDocuments;
        },
        notebookDocuments: [],
        fs: base.workspace.fs,
      }),
      languages: withDefaults({
        match: () => 10,
        registerInlineCompletionItemProvider: (_selector: unknown, provider: typeof inlineProvider) => {
          inlineProvider = provider;
          return disposable();
        },
        registerReferenceProvider: () => {
          referenceProviders += 1;
          return disposable();
        },
        registerCompletionItemProvider: (_selector: unknown, provider: typeof completionProvider) => {
          completionProvider = provider;
          return disposable();
        },
      }),
    },
    {
      get(object, property) {
        if (property in object || typeof property === 'symbol') {
          return Reflect.get(object, property);
        }
        // Any other class (Range, Position, InlineCompletionItem, CompletionItem, …).
        if (!classes.has(property)) {
          classes.set(property, class extends Base {});
        }
        return classes.get(property);
      },
    },
  );
}

function received(): { method?: string; params?: any; response?: string; result?: any }[] {
  return fs.existsSync(logFile)
    ? fs.readFileSync(logFile, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line))
    : [];
}

async function until<T>(what: string, probe: () => T | undefined | false, timeoutMs = 10000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; the server received: ${JSON.stringify(received(), null, 1)}\nlog:\n${fake.log.join('\n')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const moduleApi = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
const originalLoad = moduleApi._load;
let vscodeStub: object;

before(async () => {
  logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lsp-infer-it-')), 'received.jsonl');
  process.env.FAKE_LSP_LOG = logFile;
  fake = new FakeVscode(PKG);
  fake.settings.set('lspInfer.server.command', { globalValue: [process.execPath, SERVER] });
  fake.settings.set('lspInfer.model.nCtx', { globalValue: 8192 });
  fake.settings.set('lspInfer.model.nThreads', { globalValue: 0 });
  // Tracing: the output channel at Trace level (the gear in the Output panel), then the setting.
  (fake.channel as unknown as { logLevel: number }).logLevel = 1;
  fake.settings.set('lspInfer.trace.server', { globalValue: 'verbose' });
  fake.secrets.set('lspInfer.team.apiKey', API_KEY);
  vscodeStub = vscodeModule();
  moduleApi._load = function (request, parent, isMain) {
    return request === 'vscode' ? vscodeStub : originalLoad.call(this, request, parent, isMain);
  };
  delete require.cache[require.resolve('../src/extension')];
  loaded = require('../src/extension');
  extension = await loaded.activate(fake.context() as never);
  await extension.settled();
});

after(async () => {
  await loaded?.deactivate();
  moduleApi._load = originalLoad;
  fs.rmSync(path.dirname(logFile), { recursive: true, force: true });
});

test('initialize: the inlineCompletion capability and the settings as initializationOptions', async () => {
  const initialize = await until('initialize', () => received().find((m) => m.method === 'initialize'));
  assert.ok(initialize.params.capabilities.textDocument.inlineCompletion, 'the client asks for inline completions');
  assert.equal(initialize.params.capabilities.workspace.configuration, true);
  assert.deepEqual(initialize.params.initializationOptions, { model: { nCtx: 8192, nThreads: null }, team: { apiKey: API_KEY } });
  const started = fake.log.find((line) => line.includes('Starting the server'));
  assert.ok(started?.endsWith(`${process.execPath} ${SERVER} (from lspInfer.server.command)`), started);
});

test('workspace/configuration is answered with the nested lspInfer object', async () => {
  const answer = await until('the configuration answer', () => received().find((m) => m.response === 'initialized'));
  assert.deepEqual(answer.result, [{ model: { nCtx: 8192, nThreads: null }, team: { apiKey: API_KEY } }]);
});

test('lspInfer/status and stderr reach the status bar and the output', async () => {
  await until('ready', () => fake.statusItem.text === '$(sparkle) lsp-infer');
  assert.match(String(fake.statusItem.tooltip), /Ready: fake-model \(qwen\)/);
  await until('stderr', () => fake.log.find((line) => line === 'warn [server] lsp_infer.server: a warning from the server'));
  assert.ok(fake.log.some((line) => line === 'info [server] lsp_infer.server: initialize'));
});

test('a status sent before the initialize answer is dropped by the client (the real server sends "loading" there)', async () => {
  // vscode-languageclient installs notification handlers only after the initialize answer, so
  // the "loading" that lsp-infer sends from its initialize handler never arrives; "ready" does.
  await until('ready', () => fake.log.includes('info Model ready: fake-model (qwen)'));
  assert.ok(!fake.log.some((line) => line.startsWith('info Model loading')));
});

test('an inline completion goes to the server through the middleware; no completion-list provider is asked', async () => {
  await until('the inline provider', () => inlineProvider);
  const document = { uri: Uri.file('/work/proj/a.py'), languageId: 'python', version: 1, getText: () => 'def add(a, b):\n    return ', offsetAt: () => 26 };
  const result = await inlineProvider!.provideInlineCompletionItems(
    document,
    { line: 1, character: 11 },
    { triggerKind: 1, selectedCompletionInfo: undefined },
    { isCancellationRequested: false, onCancellationRequested: () => disposable() },
  );
  const request = received().find((m) => m.method === 'textDocument/inlineCompletion');
  assert.deepEqual(request?.params.textDocument, { uri: 'file:///work/proj/a.py' });
  assert.deepEqual(request?.params.position, { line: 1, character: 11 });
  assert.deepEqual(request?.params.context, { triggerKind: 2 }, 'typing: Automatic');
  assert.ok(result, 'an answer came back');
  assert.match(fake.statusItem.text, /^\$\(sparkle\) lsp-infer \d+ ms$/);
  // The server's completion-list fallback is registered by the client but never asked.
  assert.ok(completionProvider);
  const listed = await completionProvider.provideCompletionItems(document, { line: 1, character: 11 }, { triggerKind: 0 }, { isCancellationRequested: false });
  assert.equal(listed, undefined);
  assert.ok(!received().some((m) => m.method === 'textDocument/completion'));
});

test('a settings change: didChangeConfiguration with null settings, then the server pulls the new object', async () => {
  fake.set('lspInfer.completion.maxLines', 4);
  const change = await until('didChangeConfiguration', () => received().find((m) => m.method === 'workspace/didChangeConfiguration'));
  assert.deepEqual(change.params, { settings: null });
  const answer = await until('the new configuration', () => received().find((m) => m.response === 'didChangeConfiguration'));
  assert.deepEqual(answer.result, [{ model: { nCtx: 8192, nThreads: null }, completion: { maxLines: 4 }, team: { apiKey: API_KEY } }]);
});

test('stats come back from the server, into the output and the stats view', async () => {
  await fake.commands.get('lsp-infer.showStats')!();
  assert.ok(fake.log.some((line) => /requests\s+1\n/.test(line) && /latencyMs\.p50\s+20/.test(line)));
  assert.match(fake.panels.at(-1)!.html, /<td>Requests<\/td><td class="value">1<\/td>/);
  fake.panels.at(-1)!.dispose();
});

test('the lifecycle on the wire: shown goes out as a notification, Tab\'s command as workspace/executeCommand', async () => {
  const document = { uri: Uri.file('/work/proj/b.py'), languageId: 'python', version: 1, getText: () => 'x = ', offsetAt: () => 4 };
  await inlineProvider!.provideInlineCompletionItems(
    document,
    { line: 0, character: 4 },
    { triggerKind: 0, selectedCompletionInfo: undefined },
    { isCancellationRequested: false, onCancellationRequested: () => disposable() },
  );
  // VS Code's Invoke (0: Alt+\\ or Alt+], which asks again before moving to the next choice) is
  // LSP's Invoked (1): the server answers it with its choices.
  const asked = received().filter((m) => m.method === 'textDocument/inlineCompletion').at(-1);
  assert.deepEqual(asked?.params.context, { triggerKind: 1 });
  const shown = await until('didShowSuggestion', () => received().find((m) => m.method === 'lspInfer/didShowSuggestion'));
  assert.deepEqual(shown.params, { id: 's1' }, 'the first item is the one shown');
  // What VS Code does on Tab: run the item's command, which the client registered for the server.
  const accept = await until('the accept command', () => fake.commands.get('lspInfer.acceptSuggestion'));
  await accept({ id: 's1' });
  const executed = await until('workspace/executeCommand', () => received().find((m) => m.method === 'workspace/executeCommand'));
  assert.deepEqual(executed.params, { command: 'lspInfer.acceptSuggestion', arguments: [{ id: 's1' }] });
  assert.ok(!received().some((m) => m.method === 'lspInfer/didDismissSuggestion'));
});

test('the API key is nowhere in the output, even with verbose tracing', async () => {
  assert.ok(fake.log.some((line) => line.includes("Sending request 'initialize")), 'messages were traced');
  assert.ok(fake.log.some((line) => line.includes('<redacted>')), 'and the key masked');
  assert.ok(fake.log.every((line) => !line.includes(API_KEY)), fake.log.filter((line) => line.includes(API_KEY)).join('\n'));
});

test('lspInfer/definitions: announced in initialize; the server\'s request is answered on the wire', async () => {
  const initialize = await until('initialize', () => received().find((m) => m.method === 'initialize'));
  assert.deepEqual(initialize.params.capabilities.experimental, { lspInfer: { definitions: true, references: true, suggestionReady: true } });
  fake.files.set('/work/proj/geometry.ts', 'export function distance(a: Point, b: Point): number {\n  return 0;\n}\n');
  const asked: unknown[] = [];
  fake.commands.set('vscode.executeDefinitionProvider', async (...args: unknown[]) => {
    const [uri, position] = args as [Uri, { line: number; character: number }];
    asked.push([uri.toString(), position.line, position.character]);
    return position.line === 4
      ? [{ targetUri: Uri.file('/work/proj/geometry.ts'), targetRange: { start: { line: 0, character: 0 }, end: { line: 2, character: 1 } }, targetSelectionRange: { start: { line: 0, character: 16 }, end: { line: 0, character: 24 } } }]
      : [];
  });
  const client = (extension as unknown as { client: { sendNotification(method: string, params: unknown): Promise<void> } }).client;
  await client.sendNotification('test/askDefinitions', { textDocument: { uri: 'file:///work/proj/main.ts' }, positions: [{ line: 4, character: 9 }, { line: 5, character: 0 }] });
  const answer = await until('the definitions answer', () => received().find((m) => m.response === 'definitions'));
  assert.deepEqual(answer.result, {
    definitions: [
      {
        uri: 'file:///work/proj/geometry.ts',
        range: { start: { line: 0, character: 16 }, end: { line: 0, character: 24 } },
        text: 'export function distance(a: Point, b: Point): number {\n  return 0;\n}\n',
      },
      null,
    ],
  });
  assert.deepEqual(asked, [['file:///work/proj/main.ts', 4, 9], ['file:///work/proj/main.ts', 5, 0]]);
});

test('lspInfer/references: announced in initialize; the server\'s request is answered on the wire, lsp-infer registers no reference provider', async () => {
  const initialize = await until('initialize', () => received().find((m) => m.method === 'initialize'));
  assert.equal(initialize.params.capabilities.experimental.lspInfer.references, true);
  assert.equal(referenceProviders, 0, 'the client registered no reference provider');
  const uri = Uri.file('/work/proj/shapes.go');
  const document = new FakeDocument(uri, 'func area(w int) int {\n\treturn w * w\n}\n', 'go');
  document.version = 4;
  fake.textDocuments = [document as never];
  const asked: unknown[] = [];
  const range = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });
  fake.commands.set('vscode.executeReferenceProvider', async (...args: unknown[]) => {
    const [where, position] = args as [Uri, { line: number; character: number }];
    asked.push([where.toString(), position.line, position.character]);
    return [{ uri, range: range(1, 12, 1, 13) }, { uri: Uri.file('/work/proj/main.go'), range: range(3, 1, 3, 2) }, { uri, range: range(0, 10, 0, 11) }, { uri, range: range(1, 8, 1, 9) }];
  });
  const client = (extension as unknown as { client: { sendNotification(method: string, params: unknown): Promise<void> } }).client;
  await client.sendNotification('test/askReferences', { textDocument: { uri: 'file:///work/proj/shapes.go', version: 4 }, position: { line: 0, character: 10 } });
  const answer = await until('the references answer', () => received().find((m) => m.response === 'references'));
  assert.deepEqual(answer.result, { references: [range(0, 10, 0, 11), range(1, 8, 1, 9), range(1, 12, 1, 13)] });
  assert.deepEqual(asked, [['file:///work/proj/shapes.go', 0, 10]]);
  fake.textDocuments = [];
});

test('lspInfer/suggestionReady: announced; the server\'s notification makes VS Code ask again, and that request goes as Automatic', async () => {
  const initialize = await until('initialize', () => received().find((m) => m.method === 'initialize'));
  assert.equal(initialize.params.capabilities.experimental.lspInfer.suggestionReady, true);
  const cursor = { line: 0, character: 4 };
  const document = { uri: Uri.file('/work/proj/c.py'), languageId: 'python', version: 3, getText: () => 'x = ', offsetAt: () => 4 };
  fake.activeTextEditor = { document, selection: { active: cursor }, selections: [{ anchor: cursor, active: cursor }] } as never;
  // VS Code's trigger command: the inline provider asked again at the cursor, as Invoke (0).
  fake.commands.set('editor.action.inlineSuggest.trigger', () =>
    inlineProvider!.provideInlineCompletionItems(document, cursor, { triggerKind: 0, selectedCompletionInfo: undefined }, { isCancellationRequested: false, onCancellationRequested: () => disposable() }),
  );
  const inline = () => received().filter((m) => m.method === 'textDocument/inlineCompletion');
  const before = inline().length;
  const client = (extension as unknown as { client: { sendNotification(method: string, params: unknown): Promise<void> } }).client;
  await client.sendNotification('test/suggestionReady', { textDocument: { uri: 'file:///work/proj/c.py', version: 3 }, position: cursor });
  const asked = await until('the inline request asked again', () => inline()[before]);
  assert.deepEqual(asked.params.textDocument, { uri: 'file:///work/proj/c.py' });
  assert.deepEqual(asked.params.position, cursor);
  assert.deepEqual(asked.params.context, { triggerKind: 2 }, 'Automatic, though the trigger asked as Invoke');
  fake.activeTextEditor = undefined;
});

test('the server crashes: a warning, a new process after a pause, ready again', async () => {
  const starts = () => received().filter((m) => m.method === 'initialize').length;
  assert.equal(starts(), 1);
  const client = (extension as unknown as { client: { sendNotification(method: string): Promise<void> } }).client;
  await client.sendNotification('test/crash');
  await until('the crash warning', () => fake.messages.find((m) => /stopped unexpectedly; restarting it \(1 of 4\)/.test(m.text)));
  await until('a second start', () => starts() === 2);
  await until('ready again', () => fake.statusItem.text.startsWith('$(sparkle) lsp-infer'));
  assert.ok(fake.log.includes('error [server] lsp_infer.server: crashing on purpose'));
  assert.equal(fake.messages.filter((m) => m.kind === 'error').length, 0);
});

test('deactivate: shutdown and exit', async () => {
  await loaded.deactivate();
  await until('shutdown', () => received().find((m) => m.method === 'exit'));
  assert.ok(received().some((m) => m.method === 'shutdown'));
});
