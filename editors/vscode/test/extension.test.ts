/**
 * src/extension.ts against a fake `vscode` and a fake `vscode-languageclient/node`
 * (test/fakes): what it starts, what it sends, what it shows.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, test } from 'node:test';
import * as lc from './fakes/languageclient';
import { NEXT_EDIT_PAUSE_MS } from '../src/nextEdit';
import { FakeDocument, FakeEditor, FakeVscode, InlineCompletionTriggerKind as Trigger, Position, TextEditorSelectionChangeKind as Kind, Uri } from './fakes/vscode';

const ROOT = path.join(__dirname, '..', '..');
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const API_KEY = 'sk-team-0123456789abcdef';

let fake: FakeVscode;
const moduleApi = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
const originalLoad = moduleApi._load;
moduleApi._load = function (request, parent, isMain) {
  if (request === 'vscode') {
    return fake.module;
  }
  if (request === 'vscode-languageclient/node') {
    return lc;
  }
  return originalLoad.call(this, request, parent, isMain);
};

type ExtensionModule = typeof import('../src/extension');
let loaded: ExtensionModule;
let extension: import('../src/extension').Extension;

function load(): ExtensionModule {
  delete require.cache[require.resolve('../src/extension')];
  return require('../src/extension') as ExtensionModule;
}

/** Point the server command at an executable that exists (node itself), as a user would. */
function serverExists(): void {
  fake.settings.set('lspInfer.server.command', { globalValue: [process.execPath, 'serve'] });
}

async function activate(): Promise<lc.LanguageClient> {
  loaded = load();
  extension = await loaded.activate(fake.context() as never, { schedule });
  await extension.settled();
  return lc.clients[lc.clients.length - 1];
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** The extension's timers, run by hand: `step()` runs the oldest one and what follows from it. */
let timers: { run: () => void; ms: number }[] = [];
function schedule(run: () => void, ms: number): () => void {
  const timer = { run, ms };
  timers.push(timer);
  return () => (timers = timers.filter((t) => t !== timer));
}
async function step(): Promise<number | undefined> {
  await flush();
  const timer = timers.shift();
  timer?.run();
  await flush();
  await extension.settled();
  await flush();
  return timer?.ms;
}
/** A failure is reported after a short wait (for the server's last stderr lines). */
const reported = step;
/** Then the restart waits (0.5 s, 1 s, 2 s, 4 s) and runs. */
const restarted = step;

beforeEach(() => {
  timers = [];
  fake = new FakeVscode(PKG);
  lc.clients.length = 0;
  lc.setAnswer(() => null);
  lc.setStartError(undefined);
  lc.setServerInfo(undefined);
});

afterEach(async () => {
  await loaded?.deactivate();
});

describe('activation', () => {
  test('registers every contributed command and starts the server over plain stdio', async () => {
    serverExists();
    const client = await activate();
    for (const { command } of PKG.contributes.commands) {
      assert.ok(fake.commands.has(command), command);
    }
    assert.deepEqual(client.serverOptions.command, process.execPath);
    assert.deepEqual(client.serverOptions.args, ['serve']);
    assert.equal(client.serverOptions.transport, undefined, 'no --stdio argument appended');
    assert.equal(client.id, 'lspInfer');
    assert.ok(client.proposed, 'registerProposedFeatures() was called');
    assert.deepEqual(client.clientOptions.documentSelector, [{ scheme: 'file' }, { scheme: 'untitled' }]);
    assert.deepEqual(client.initializationOptions, [{}], 'nothing set: the server keeps its defaults');
    assert.ok(fake.statusItem.visible);
    assert.equal(fake.statusItem.command, 'lsp-infer.showMenu');
    assert.equal(fake.statusItem.text, '$(sparkle) lsp-infer');
    assert.ok(fake.log.some((line) => line.includes(`Starting the server: ${process.execPath} serve`)));
  });

  test('the default command is missing: an error with the fix and an "Open Settings" button', async () => {
    fake.settings.set('lspInfer.server.command', { globalValue: ['lsp-infer-surely-not-installed-here', 'serve'] });
    fake.buttons.push('Open Settings');
    await activate();
    assert.equal(lc.clients.length, 0, 'nothing is spawned');
    const [message] = fake.messages;
    assert.equal(message.kind, 'error');
    assert.match(message.text, /not on PATH/);
    assert.match(message.text, /pip install 'lsp-infer\[model\]'/);
    assert.deepEqual(message.actions, ['Open Settings', 'Show Output']);
    assert.match(fake.statusItem.text, /\$\(error\)/);
    await flush();
    assert.deepEqual(fake.executed.at(-1), { command: 'workbench.action.openSettings', args: ['lspInfer.server.command'] });
  });

  test('pythonPath runs `python -m lsp_infer serve`', async () => {
    fake.settings.set('lspInfer.server.pythonPath', { globalValue: process.execPath });
    const client = await activate();
    assert.deepEqual([client.serverOptions.command, ...client.serverOptions.args], [process.execPath, '-m', 'lsp_infer', 'serve']);
  });

  test('a failed start: one message of ours (not the client\'s), retried politely, then Restart is offered', async () => {
    serverExists();
    lc.setStartError(new Error('Pending response rejected since connection got disposed'));
    await activate();
    assert.equal(fake.messages.length, 0, 'reported after the server\'s last stderr lines are read');
    assert.equal(await reported(), 200);
    assert.equal(fake.messages.length, 1);
    assert.equal(fake.messages[0].kind, 'warning');
    assert.match(fake.messages[0].text, /the server did not start \(Pending response rejected.*\); restarting it \(1 of 4\)/);
    assert.deepEqual(lc.clients[0].popups, [], "vscode-languageclient's own pop-up is suppressed");
    assert.equal(lc.clients[0].clientOptions.revealOutputChannelOn, lc.RevealOutputChannelOn.Never);
    assert.match(fake.statusItem.text, /loading~spin/);
    assert.equal(fake.statusItem.backgroundColor?.id, 'statusBarItem.warningBackground');
    const delays: (number | undefined)[] = [];
    for (let i = 0; i < 4; i++) {
      delays.push(await restarted());
      if (i < 3) {
        await reported();
      }
    }
    assert.deepEqual(delays, [500, 1000, 2000, 4000], 'a growing pause between attempts');
    assert.equal(lc.clients.length, 5, 'the first start and 4 restarts');
    assert.ok(lc.clients.slice(0, 4).every((client) => client.disposed));
    assert.equal(fake.messages.length, 1, 'no message per attempt');
    await reported();
    const last = fake.messages.at(-1)!;
    assert.equal(last.kind, 'error');
    assert.match(last.text, /failed 5 times in the last 3 minutes and is not restarted again/);
    assert.deepEqual(last.actions, ['Restart', 'Show Output', 'Open Settings']);
    assert.match(fake.statusItem.text, /\$\(error\)/);
    assert.equal(timers.length, 0, 'given up: nothing scheduled');
    lc.setStartError(undefined);
    await extension.restart(true);
    assert.equal(lc.clients.length, 6);
    assert.equal(lc.clients[5].state, lc.State.Running);
    assert.equal(fake.statusItem.text, '$(sparkle) lsp-infer');
  });

  test('a start that fails and also closes the connection is handled once', async () => {
    serverExists();
    lc.setStartError(new Error('connection closed'));
    const client = await activate();
    await client.crash();
    await reported();
    assert.equal(fake.messages.length, 1);
    assert.equal(timers.length, 1, 'one restart scheduled, not two');
    lc.setStartError(undefined);
    await restarted();
    assert.equal(lc.clients.length, 2);
    assert.equal(timers.length, 0);
  });
});

describe('settings', () => {
  test('initializationOptions and workspace/configuration: the nested object, with the API key', async () => {
    serverExists();
    fake.settings.set('lspInfer.model.nCtx', { globalValue: 8192 });
    fake.settings.set('lspInfer.model.path', { workspaceValue: '' });
    fake.settings.set('lspInfer.completion.maxLines', { workspaceFolderValue: 4 });
    fake.settings.set('lspInfer.team.url', { globalValue: 'http://team:8000/v1' });
    fake.secrets.set('lspInfer.team.apiKey', API_KEY);
    const client = await activate();
    const expected = {
      model: { path: null, nCtx: 8192 },
      completion: { maxLines: 4 },
      team: { url: 'http://team:8000/v1', apiKey: API_KEY },
    };
    assert.deepEqual(client.initializationOptions[0], expected);
    const configuration = client.clientOptions.middleware.workspace.configuration;
    let delegated: unknown;
    const answer = await configuration(
      { items: [{ section: 'lspInfer' }, { section: 'editor' }, { section: 'lspInfer.completion' }] },
      {},
      async (params: unknown) => {
        delegated = params;
        return [null, { tabSize: 4 }, null];
      },
    );
    assert.deepEqual(answer, [expected, { tabSize: 4 }, { maxLines: 4 }]);
    assert.ok(delegated, 'other sections are asked of VS Code');
    const own = await configuration({ items: [{ section: 'lspInfer' }] }, {}, () => assert.fail('not delegated'));
    assert.deepEqual(own, [expected]);
  });

  test('the API key never reaches the output channel, even in verbose message traces', async () => {
    serverExists();
    fake.secrets.set('lspInfer.team.apiKey', API_KEY);
    const client = await activate();
    // What vscode-languageclient prints with lspInfer.trace.server = verbose:
    client.clientOptions.traceOutputChannel.trace(`Sending request 'initialize - (0)'.\nParams: ${JSON.stringify({ initializationOptions: client.initializationOptions[0] })}`);
    client.clientOptions.outputChannel.error('Result', { items: [client.initializationOptions[0]] });
    fake.set('lspInfer.completion.maxTokens', 32);
    assert.ok(fake.log.length > 3);
    assert.ok(fake.log.every((line) => !line.includes(API_KEY)), fake.log.join('\n'));
    assert.ok(fake.log.some((line) => line.includes('<redacted>')));
  });

  test('a server setting change notifies the server to pull; no restart', async () => {
    serverExists();
    const client = await activate();
    fake.set('lspInfer.completion.maxLines', 3);
    assert.deepEqual(client.notifications, [{ method: 'workspace/didChangeConfiguration', params: { settings: null } }]);
    assert.equal(lc.clients.length, 1);
    fake.set('editor.fontSize', 20);
    assert.equal(client.notifications.length, 1, 'other sections are none of our business');
  });

  test('lspInfer.server.* changes restart the server with the new command and settings', async () => {
    serverExists();
    const first = await activate();
    fake.set('lspInfer.completion.maxLines', 2);
    fake.set('lspInfer.server.command', [process.execPath, 'serve', '--log-file', '/tmp/x.log']);
    await extension.settled();
    assert.equal(lc.clients.length, 2);
    assert.ok(first.disposed);
    const second = lc.clients[1];
    assert.deepEqual(second.serverOptions.args, ['serve', '--log-file', '/tmp/x.log']);
    assert.deepEqual(second.initializationOptions[0], { completion: { maxLines: 2 } });
  });

  test('Set Team API Key stores the key in SecretStorage, tells the server, and never logs it', async () => {
    serverExists();
    const client = await activate();
    fake.inputs.push(`  ${API_KEY} `);
    await fake.commands.get('lsp-infer.setTeamApiKey')!();
    assert.equal(fake.secrets.get('lspInfer.team.apiKey'), API_KEY);
    assert.equal(fake.inputBoxes[0].password, true);
    assert.ok(client.notifications.some((n) => n.method === 'workspace/didChangeConfiguration'));
    assert.deepEqual(extension.serverSettings(), { team: { apiKey: API_KEY } });
    assert.ok(fake.log.every((line) => !line.includes(API_KEY)));
    fake.inputs.push('');
    await fake.commands.get('lsp-infer.setTeamApiKey')!();
    assert.equal(fake.secrets.has('lspInfer.team.apiKey'), false, 'empty removes it');
    assert.deepEqual(extension.serverSettings(), {});
  });
});

describe('status bar and requests', () => {
  test('lspInfer/status and inline completions drive the status bar', async () => {
    serverExists();
    const client = await activate();
    client.notify('lspInfer/status', { state: 'loading', message: 'loading the model' });
    assert.equal(fake.statusItem.text, '$(loading~spin) lsp-infer: loading model');
    client.notify('lspInfer/status', { state: 'ready', message: 'qwen2.5-coder-0.5b (qwen)' });
    assert.equal(fake.statusItem.text, '$(sparkle) lsp-infer');
    const provide = client.clientOptions.middleware.provideInlineCompletionItems;
    let release!: (value: unknown) => void;
    const document = new FakeDocument(Uri.file('/work/proj/a.py'), 'def add(a, b):\n    return ');
    const pending = provide(document, new Position(1, 11), {}, { isCancellationRequested: false }, () => new Promise((resolve) => (release = resolve)));
    await flush();
    assert.match(fake.statusItem.text, /sync~spin/, 'busy while a request is in flight');
    release({ items: [{ insertText: 'a + b' }] });
    assert.deepEqual(await pending, { items: [{ insertText: 'a + b' }] });
    assert.match(fake.statusItem.text, /^\$\(sparkle\) lsp-infer \d+ ms$/);
    client.notify('lspInfer/status', { state: 'failed', message: 'sha256 mismatch' });
    assert.match(fake.statusItem.text, /\$\(error\)/);
    assert.match(String(fake.statusItem.tooltip), /sha256 mismatch/);
  });

  test('lsp-infer running but silent about its model yet: not shown as ready', async () => {
    serverExists();
    lc.setServerInfo({ name: 'lsp-infer', version: '0.1.0' });
    const client = await activate();
    assert.equal(fake.statusItem.text, '$(loading~spin) lsp-infer', 'no sparkle before the first lspInfer/status');
    assert.match(String(fake.statusItem.tooltip), /Waiting for the server to report its model/);
    client.notify('lspInfer/status', { state: 'loading', message: 'loading the model' });
    assert.equal(fake.statusItem.text, '$(loading~spin) lsp-infer: loading model');
    client.notify('lspInfer/status', { state: 'ready', message: 'qwen2.5-coder-0.5b (qwen)' });
    assert.equal(fake.statusItem.text, '$(sparkle) lsp-infer');
    // Another server (named in lspInfer.server.command) may never report: it is taken as ready.
    lc.setServerInfo({ name: 'some-other-server' });
    await fake.commands.get('lsp-infer.restartServer')!();
    assert.equal(lc.clients.at(-1)!.initializeResult?.serverInfo?.name, 'some-other-server');
    assert.equal(fake.statusItem.text, '$(sparkle) lsp-infer');
  });

  test('completions off: the toggle writes the setting, the status bar says so, no requests are sent', async () => {
    serverExists();
    const client = await activate();
    await fake.commands.get('lsp-infer.toggleCompletions')!();
    assert.deepEqual(fake.settings.get('lspInfer.completion.enabled'), { globalValue: false });
    assert.match(fake.statusItem.text, /circle-slash/);
    assert.deepEqual(client.notifications.at(-1), { method: 'workspace/didChangeConfiguration', params: { settings: null } });
    const provide = client.clientOptions.middleware.provideInlineCompletionItems;
    assert.equal(await provide({}, {}, {}, { isCancellationRequested: false }, () => assert.fail('no request while off')), undefined);
    fake.settings.set('lspInfer.completion.enabled', { globalValue: false, workspaceValue: false });
    await fake.commands.get('lsp-infer.toggleCompletions')!();
    assert.deepEqual(fake.settings.get('lspInfer.completion.enabled'), { globalValue: false, workspaceValue: true }, 'written where it takes effect');
    assert.equal(fake.statusItem.text, '$(sparkle) lsp-infer');
  });

  test('the completion-list fallback is never asked (it would race the inline request)', async () => {
    serverExists();
    const client = await activate();
    assert.equal(client.clientOptions.middleware.provideCompletionItem({}, {}, {}, {}, () => assert.fail('asked')), undefined);
  });

  test('stats: formatted in the output and drawn in a webview; an older server gets "update it"', async () => {
    serverExists();
    const client = await activate();
    const stats = {
      requests: 12,
      latencyMs: { p50: 150.4 },
      latencyByMinute: { bucketSeconds: 60, points: [{ t: 60, count: 12, p50: 150.4, p95: 300 }] },
      suggestions: { shown: 3, accepted: 1, acceptanceRate: 1 / 3 },
    };
    lc.setAnswer((method) => (method === 'lspInfer/stats' ? stats : null));
    await fake.commands.get('lsp-infer.showStats')!();
    assert.deepEqual(client.requests.at(-1), { method: 'lspInfer/stats', params: {} });
    assert.ok(fake.log.some((line) => /requests\s+12/.test(line) && /latencyMs\.p50\s+150/.test(line) && /suggestions\.accepted\s+1/.test(line)));
    assert.equal(fake.panels.length, 1);
    const panel = fake.panels[0];
    assert.equal(panel.viewType, 'lspInfer.stats');
    assert.deepEqual(panel.options, { enableScripts: false });
    assert.match(panel.html, /<svg class="chart"/);
    assert.match(panel.html, /33 % \(1\/3\)/);
    assert.match(panel.html, /vscode-webview:\/\/fake/, 'the webview\'s CSP source');

    // Open: asked again every 10 s while visible; the command again reuses the panel.
    stats.requests = 13;
    assert.equal(timers.at(-1)?.ms, 10_000);
    await step();
    assert.match(panel.html, /<td>Requests<\/td><td class="value">13<\/td>/);
    await fake.commands.get('lsp-infer.showStats')!();
    assert.equal(fake.panels.length, 1);
    // Closed while a refresh waits for the server: not opened again.
    let answer!: (value: unknown) => void;
    lc.setAnswer((method) => (method === 'lspInfer/stats' ? new Promise((resolve) => (answer = resolve)) : null));
    const refreshing = step();
    await flush();
    panel.dispose();
    answer(stats);
    await refreshing;
    assert.equal(fake.panels.length, 1);
    assert.equal(timers.length, 0, 'closed: no more refreshes');
    lc.setAnswer((method) => (method === 'lspInfer/stats' ? stats : null));

    lc.setAnswer(() => new lc.ResponseError(-32601, 'Method Not Found: lspInfer/stats'));
    await fake.commands.get('lsp-infer.showStats')!();
    assert.match(fake.messages.at(-1)!.text, /does not answer lspInfer\/stats yet/);
  });

  test('the menu runs the picked command', async () => {
    serverExists();
    await activate();
    fake.picks.push((items) => items.find((item) => /Turn completions off/.test(item.label)));
    await fake.commands.get('lsp-infer.showMenu')!();
    assert.equal(fake.effective('lspInfer.completion.enabled'), false);
  });

  test('server stderr goes to the output at each line\'s level, and known failures become hints', async () => {
    serverExists();
    const client = await activate();
    const stderr = new PassThrough();
    const seen: string[] = [];
    const channel = { info: (t: string) => seen.push(`info ${t}`), warn: (t: string) => seen.push(`warn ${t}`), error: (t: string) => seen.push(`error ${t}`), debug: (t: string) => seen.push(`debug ${t}`), trace: () => undefined };
    client.clientOptions.stdioOptions.stderr(stderr, channel);
    stderr.write('2025-01-02 03:04:05,678 INFO lsp_infer.server: serving\n2025-01-02 03:04:05,679 WARNING lsp_infer: slow\n/usr/bin/python3: No module named lsp_infer\n');
    stderr.end();
    await flush();
    assert.deepEqual(seen, ['info [server] lsp_infer.server: serving', 'warn [server] lsp_infer: slow', 'warn [server] /usr/bin/python3: No module named lsp_infer']);
    await client.crash();
    await reported();
    assert.match(fake.messages.at(-1)!.text, /pip install 'lsp-infer\[model\]'/);
  });
});

describe('crashes', () => {
  test('a crashed server is restarted (a new client) up to 4 times, then Restart is offered', async () => {
    serverExists();
    await activate();
    for (let i = 1; i <= 4; i++) {
      const client = lc.clients.at(-1)!;
      const result = (await client.crash()) as { action: number; handled: boolean };
      assert.equal(result.action, lc.CloseAction.DoNotRestart, 'never the client\'s own restart');
      assert.equal(result.handled, true);
      assert.deepEqual(client.popups, []);
      await reported();
      assert.match(fake.statusItem.text, /loading~spin/, 'restarting');
      await restarted();
      assert.equal(lc.clients.length, i + 1);
      assert.equal(lc.clients.at(-1)!.state, lc.State.Running);
      assert.equal(fake.statusItem.text, '$(sparkle) lsp-infer');
    }
    assert.equal(fake.messages.length, 1, 'one warning for the first crash of a series');
    assert.equal(fake.messages[0].kind, 'warning');
    assert.match(fake.messages[0].text, /stopped unexpectedly; restarting it \(1 of 4\)/);
    fake.buttons.push('Restart');
    await lc.clients.at(-1)!.crash();
    await reported();
    const message = fake.messages.at(-1)!;
    assert.equal(message.kind, 'error');
    assert.match(message.text, /failed 5 times in the last 3 minutes and is not restarted again \(last: the server stopped unexpectedly\)/);
    assert.deepEqual(message.actions, ['Restart', 'Show Output', 'Open Settings']);
    await flush();
    await extension.settled();
    assert.equal(lc.clients.length, 6, 'Restart starts a new server');
    assert.equal(lc.clients[5].state, lc.State.Running);
    assert.equal(fake.statusItem.text, '$(sparkle) lsp-infer');
  });

  test('the reason from the server\'s stderr is in the message', async () => {
    serverExists();
    const client = await activate();
    const stderr = new PassThrough();
    client.clientOptions.stdioOptions.stderr(stderr, client.clientOptions.outputChannel);
    await client.crash();
    // The last stderr lines arrive after the close: the report waits for them.
    stderr.end('/usr/bin/python3: No module named lsp_infer\n');
    await reported();
    assert.match(fake.messages[0].text, /restarting it \(1 of 4\)\. lsp-infer is not installed in the Python set in lspInfer\.server\.pythonPath/);
  });

  test('a crash of an old client (already replaced) is ignored', async () => {
    serverExists();
    const first = await activate();
    await extension.restart(true);
    await first.crash();
    await flush();
    assert.equal(timers.length, 0);
    assert.equal(fake.messages.length, 0);
    assert.equal(lc.clients.length, 2);
  });

  test('deactivation cancels a pending restart', async () => {
    serverExists();
    const client = await activate();
    await client.crash();
    await reported();
    assert.equal(timers.length, 1);
    await loaded.deactivate();
    assert.equal(timers.length, 0);
    assert.equal(lc.clients.length, 1);
  });

  test('a restart asked for meanwhile replaces the scheduled one', async () => {
    serverExists();
    const client = await activate();
    await client.crash();
    await reported();
    await fake.commands.get('lsp-infer.restartServer')!();
    assert.equal(timers.length, 0);
    assert.equal(lc.clients.length, 2);
  });
});

describe('refactor commands', () => {
  test('a server without the team tier: a clear message, no request', async () => {
    serverExists();
    const client = await activate();
    fake.activeTextEditor = { document: { uri: Uri.file('/work/proj/a.py') } };
    fake.inputs.push('add type hints');
    await fake.commands.get('lsp-infer.refactorFile')!();
    assert.match(fake.messages.at(-1)!.text, /does not offer lspInfer\.refactorFile/);
    assert.equal(client.requests.length, 0);
  });

  test('refactor file: asks for the instruction, then workspace/executeCommand with {uri, instruction}', async () => {
    serverExists();
    const client = await activate();
    client.initializeResult = { capabilities: { executeCommandProvider: { commands: ['lspInfer.refactorFile', 'lspInfer.refactorFiles'] } } };
    fake.activeTextEditor = { document: { uri: Uri.file('/work/proj/a.py') } };
    fake.inputs.push('  add type hints ');
    await fake.commands.get('lsp-infer.refactorFile')!();
    assert.equal(fake.inputBoxes[0].title, 'lsp-infer: Refactor a.py');
    assert.deepEqual(client.requests.at(-1), {
      method: 'workspace/executeCommand',
      params: { command: 'lspInfer.refactorFile', arguments: [{ uri: 'file:///work/proj/a.py', instruction: 'add type hints' }] },
    });
    // The explorer's context menu passes the file; the last instruction is offered again.
    fake.inputs.push('rename x');
    await fake.commands.get('lsp-infer.refactorFile')!(Uri.file('/work/proj/b.py'));
    assert.equal(fake.inputBoxes[1].value, 'add type hints');
    assert.deepEqual((client.requests.at(-1)!.params as { arguments: unknown[] }).arguments, [{ uri: 'file:///work/proj/b.py', instruction: 'rename x' }]);
    // Escape in the input box: nothing is sent.
    fake.inputs.push(undefined);
    await fake.commands.get('lsp-infer.refactorFile')!();
    assert.equal(client.requests.length, 2);
  });

  test('refactor open files: every open file-scheme document, once, in one request', async () => {
    serverExists();
    const client = await activate();
    client.initializeResult = { capabilities: { executeCommandProvider: { commands: ['lspInfer.refactorFiles'] } } };
    fake.textDocuments = [
      { uri: Uri.file('/work/proj/a.py'), isClosed: false },
      { uri: Uri.parse('untitled:Untitled-1'), isClosed: false },
      { uri: Uri.file('/work/proj/b.py'), isClosed: false },
      { uri: Uri.file('/work/proj/c.py'), isClosed: true },
    ];
    fake.inputs.push('use pathlib');
    await fake.commands.get('lsp-infer.refactorOpenFiles')!();
    assert.equal(fake.inputBoxes[0].title, 'lsp-infer: Refactor 2 open files');
    assert.deepEqual(client.requests.at(-1), {
      method: 'workspace/executeCommand',
      params: { command: 'lspInfer.refactorFiles', arguments: [{ uris: ['file:///work/proj/a.py', 'file:///work/proj/b.py'], instruction: 'use pathlib' }] },
    });
  });

  test('a failed refactor is reported; a cancelled one is not', async () => {
    serverExists();
    const client = await activate();
    client.initializeResult = { capabilities: { executeCommandProvider: { commands: ['lspInfer.refactorFile'] } } };
    fake.activeTextEditor = { document: { uri: Uri.file('/work/proj/a.py') } };
    lc.setAnswer(() => new lc.ResponseError(-32803, 'team server unreachable'));
    fake.inputs.push('x');
    await fake.commands.get('lsp-infer.refactorFile')!();
    assert.match(fake.messages.at(-1)!.text, /refactor of a\.py failed: team server unreachable/);
    const count = fake.messages.length;
    lc.setAnswer(() => new lc.ResponseError(-32800, 'cancelled'));
    fake.inputs.push('x');
    await fake.commands.get('lsp-infer.refactorFile')!();
    assert.equal(fake.messages.length, count);
  });
});

describe('the suggestion lifecycle', () => {
  const TEXT = 'def add(a, b):\n    return ';
  const item = (id: string, insertText: string) => ({ insertText, command: { title: 'Accept', command: 'lspInfer.acceptSuggestion', arguments: [{ id }] } });
  const lifecycle = (client: lc.LanguageClient) => client.notifications.filter((n) => n.method.startsWith('lspInfer/did'));
  const ask = (client: lc.LanguageClient, document: FakeDocument, items: unknown[], cancelled = false) =>
    client.clientOptions.middleware.provideInlineCompletionItems(document, document.positionAt(document.text.length), {}, { isCancellationRequested: cancelled }, async () => ({ items }));

  test('shown: the first item of an answer VS Code still wanted; dismissed when something else comes', async () => {
    serverExists();
    const client = await activate();
    const document = new FakeDocument(Uri.file('/work/proj/a.py'), TEXT);
    await ask(client, document, [item('s1', 'a + b'), item('s2', 'b + a')]);
    await ask(client, document, [item('s1', 'a + b'), item('s2', 'b + a')]); // Alt+] asks again
    await ask(client, document, [item('s9', 'x')], true); // cancelled: VS Code drops it
    assert.deepEqual(lifecycle(client), [{ method: 'lspInfer/didShowSuggestion', params: { id: 's1' } }]);
    document.text = TEXT + 'a';
    await ask(client, document, [item('s3', ' - b')]);
    await ask(client, document, []);
    assert.deepEqual(lifecycle(client).slice(1), [
      { method: 'lspInfer/didShowSuggestion', params: { id: 's3' } },
      { method: 'lspInfer/didDismissSuggestion', params: { id: 's1' } },
      { method: 'lspInfer/didDismissSuggestion', params: { id: 's3' } },
    ]);
  });

  test('accepted: the item\'s command goes to the server; a choice cycled past is dismissed', async () => {
    serverExists();
    const client = await activate();
    const document = new FakeDocument(Uri.file('/work/proj/a.py'), TEXT);
    await ask(client, document, [item('s1', 'a + b'), item('s2', 'b + a')]);
    const next = (command: string, args: unknown[]) => ({ ran: command, args });
    const ran = await client.clientOptions.middleware.executeCommand('lspInfer.acceptSuggestion', [{ id: 's2' }], next);
    assert.deepEqual(ran, { ran: 'lspInfer.acceptSuggestion', args: [{ id: 's2' }] }, 'passed on to the server');
    assert.deepEqual(lifecycle(client).slice(1), [{ method: 'lspInfer/didDismissSuggestion', params: { id: 's1' } }]);
    assert.deepEqual(await client.clientOptions.middleware.executeCommand('lspInfer.refactorFile', [{}], next), { ran: 'lspInfer.refactorFile', args: [{}] });
    assert.equal(lifecycle(client).length, 2);
  });

  test('partly accepted: Accept Next Word runs VS Code\'s, then reports how much of the item is in', async () => {
    serverExists();
    const client = await activate();
    const document = new FakeDocument(Uri.file('/work/proj/a.py'), TEXT);
    const editor = { document, selection: { active: document.positionAt(TEXT.length) } };
    fake.activeTextEditor = editor;
    await ask(client, document, [item('s1', 'a + b')]);
    // VS Code's own command: inserts "a " at the cursor and moves it (here, by hand).
    fake.commands.set('editor.action.inlineSuggest.acceptNextWord', () => {
      document.text += 'a ';
      document.version += 1;
      editor.selection = { active: document.positionAt(document.text.length) };
    });
    await fake.commands.get('lsp-infer.acceptNextWord')!();
    assert.deepEqual(fake.executed.at(-1), { command: 'editor.action.inlineSuggest.acceptNextWord', args: [] });
    assert.deepEqual(lifecycle(client).at(-1), { method: 'lspInfer/didPartiallyAcceptSuggestion', params: { id: 's1', acceptedLength: 2 } });
    // Nothing shown by lsp-infer (another provider's suggestion): VS Code's command, no report.
    fake.activeEditorChanged.fire(undefined);
    assert.deepEqual(lifecycle(client).at(-1), { method: 'lspInfer/didDismissSuggestion', params: { id: 's1' } });
    const sent = lifecycle(client).length;
    await fake.commands.get('lsp-infer.acceptNextWord')!();
    assert.equal(lifecycle(client).length, sent);
  });

  test('a closed document dismisses its suggestion; a restarted server starts afresh', async () => {
    serverExists();
    const client = await activate();
    const document = new FakeDocument(Uri.file('/work/proj/a.py'), TEXT);
    await ask(client, document, [item('s1', 'a + b')]);
    fake.documentClosed.fire({ uri: document.uri });
    assert.deepEqual(lifecycle(client).at(-1), { method: 'lspInfer/didDismissSuggestion', params: { id: 's1' } });
    await ask(client, document, [item('s2', 'a + b')]);
    await fake.commands.get('lsp-infer.restartServer')!();
    const second = lc.clients.at(-1)!;
    assert.notEqual(second, client);
    fake.documentClosed.fire({ uri: document.uri });
    assert.deepEqual(lifecycle(second), [], 'the old server\'s ids are not sent to the new one');
  });
});

describe('warming the prompt where the cursor rests (lspInfer/warm)', () => {
  const TEXT = 'import os\n\ndef add(a, b):\n    return a + b\n';
  const warms = (client: lc.LanguageClient) => client.notifications.filter((n) => n.method === 'lspInfer/warm');
  const warm = (uri: string, line: number, character: number) => ({ method: 'lspInfer/warm', params: { textDocument: { uri }, position: { line, character } } });
  const editorOf = (uri: Uri, line = 0, character = 0) => new FakeEditor(new FakeDocument(uri, TEXT), new Position(line, character));
  const A = 'file:///work/proj/a.py';
  /** The pending warm timers (the extension keeps one at most). */
  const pending = () => timers.filter((t) => t.ms === loaded.WARM_DEBOUNCE_MS);
  /** The cursor rests: run the warm timer. */
  async function rest(): Promise<void> {
    const [timer] = pending();
    assert.ok(timer, 'a warm is pending');
    timers = timers.filter((t) => t !== timer);
    timer.run();
    await flush();
  }

  test('switching to an editor of a synced document warms its cursor at once, once', async () => {
    serverExists();
    const client = await activate();
    const a = editorOf(Uri.file('/work/proj/a.py'), 3, 4);
    fake.switchTo(a);
    assert.deepEqual(warms(client), [warm(A, 3, 4)]);
    fake.switchTo(undefined);
    fake.switchTo(a);
    assert.equal(warms(client).length, 1, 'the same place of the same version: not again');
    const untitled = editorOf(Uri.parse('untitled:Untitled-1'), 0, 2);
    fake.switchTo(untitled);
    assert.deepEqual(warms(client).at(-1), warm('untitled:/Untitled-1', 0, 2));
    assert.equal(pending().length, 0, 'a switch sends at once, no timer');
  });

  test('the active editor when the server starts is warmed', async () => {
    serverExists();
    const a = editorOf(Uri.file('/work/proj/a.py'), 2, 1);
    fake.activeTextEditor = a;
    const client = await activate();
    assert.deepEqual(warms(client), [warm(A, 2, 1)]);
  });

  test('a cursor moved without an edit is warmed once it rests (one timer, restarted on every move)', async () => {
    serverExists();
    const client = await activate();
    const a = editorOf(Uri.file('/work/proj/a.py'));
    fake.switchTo(a);
    assert.equal(warms(client).length, 1);
    fake.moveCursor(a, new Position(1, 0), Kind.Keyboard);
    fake.moveCursor(a, new Position(2, 3), Kind.Mouse);
    fake.moveCursor(a, new Position(3, 11), Kind.Command);
    assert.equal(pending().length, 1, 'one timer');
    assert.ok(loaded.WARM_DEBOUNCE_MS >= 300 && loaded.WARM_DEBOUNCE_MS <= 500);
    assert.equal(warms(client).length, 1, 'nothing before the cursor rests');
    await rest();
    assert.deepEqual(warms(client), [warm(A, 0, 0), warm(A, 3, 11)], 'only where it came to rest');
    fake.moveCursor(a, new Position(3, 11), Kind.Mouse);
    await rest();
    assert.equal(warms(client).length, 2, 'the same place again: not sent twice');
  });

  test('a cursor moved by an edit (typing) is not warmed, and typing drops a pending warm', async () => {
    serverExists();
    const client = await activate();
    const a = editorOf(Uri.file('/work/proj/a.py'), 3, 16);
    fake.switchTo(a);
    fake.moveCursor(a, new Position(3, 15));
    assert.equal(pending().length, 1);
    fake.type(a, ' ');
    assert.equal(pending().length, 0, 'typing started: the pending warm is dropped');
    fake.type(a, 'c');
    fake.moveCursor(a, new Position(3, 17), undefined); // e.g. an undo: version changed, kind undefined
    a.document.version += 1;
    fake.moveCursor(a, new Position(3, 16), Kind.Command);
    assert.equal(pending().length, 0);
    assert.equal(warms(client).length, 1, 'only the switch');
    // Then an arrow key without an edit: warmed, at the document's new version.
    fake.moveCursor(a, new Position(0, 0), Kind.Keyboard);
    await rest();
    assert.deepEqual(warms(client).at(-1), warm(A, 0, 0));
  });

  test('documents the client does not sync, and editors other than the active one, are not warmed', async () => {
    serverExists();
    const client = await activate();
    const git = editorOf(Uri.parse('git:/work/proj/a.py'), 1, 1);
    fake.switchTo(git);
    fake.moveCursor(git, new Position(2, 0));
    await rest();
    assert.deepEqual(warms(client), [], 'not in the documentSelector');
    const a = editorOf(Uri.file('/work/proj/a.py'));
    fake.moveCursor(a, new Position(2, 0)); // a visible editor that is not the active one
    assert.equal(pending().length, 0);
    assert.deepEqual(warms(client), []);
  });

  test('nothing is sent while the server is not running, with completions off or completion.warm off', async () => {
    serverExists();
    const client = await activate();
    const a = editorOf(Uri.file('/work/proj/a.py'), 1, 0);
    client.state = lc.State.Starting;
    fake.switchTo(a);
    fake.moveCursor(a, new Position(2, 0));
    await rest();
    assert.deepEqual(warms(client), [], 'not running');
    client.state = lc.State.Running;
    fake.set('lspInfer.completion.enabled', false);
    fake.moveCursor(a, new Position(2, 1));
    await rest();
    fake.set('lspInfer.completion.enabled', true);
    fake.set('lspInfer.completion.warm', false);
    fake.moveCursor(a, new Position(2, 2));
    await rest();
    assert.deepEqual(warms(client), [], 'off');
    fake.set('lspInfer.completion.warm', true);
    fake.moveCursor(a, new Position(2, 3));
    await rest();
    assert.deepEqual(warms(client), [warm(A, 2, 3)]);
    // A restarted server has nothing warm: the same place is sent to it again.
    await fake.commands.get('lsp-infer.restartServer')!();
    const second = lc.clients.at(-1)!;
    fake.switchTo(a);
    assert.deepEqual(warms(second), [warm(A, 2, 3)]);
  });

  test('deactivation drops a pending warm and the listeners', async () => {
    serverExists();
    const client = await activate();
    const a = editorOf(Uri.file('/work/proj/a.py'));
    fake.switchTo(a);
    fake.moveCursor(a, new Position(1, 0));
    assert.equal(pending().length, 1);
    await loaded.deactivate();
    assert.equal(pending().length, 0);
    fake.moveCursor(a, new Position(2, 0));
    fake.switchTo(editorOf(Uri.file('/work/proj/b.py')));
    assert.equal(pending().length, 0);
    assert.equal(warms(client).length, 1);
  });
});

describe('where names are defined (lspInfer/definitions)', () => {
  const METHOD = 'lspInfer/definitions';
  const GEOMETRY = '/** The distance between two points. */\nexport function distance(a: Point, b: Point): number {\n  return 0;\n}\n';
  const range = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });
  const params = (...positions: { line: number; character: number }[]) => ({ textDocument: { uri: 'file:///work/proj/main.ts' }, positions });
  /** VS Code's definition providers: the answer for a position, by "line:character". */
  function provider(answers: Record<string, unknown>): { uri: string; position: Position }[] {
    const asked: { uri: string; position: Position }[] = [];
    fake.commands.set('vscode.executeDefinitionProvider', async (...args: unknown[]) => {
      const [uri, position] = args as [Uri, Position];
      asked.push({ uri: uri.toString(), position });
      const answer = answers[`${position.line}:${position.character}`];
      if (answer instanceof Error) {
        throw answer;
      }
      return answer;
    });
    return asked;
  }

  test('announced in the initialize capabilities, beside the client\'s own experimental ones', async () => {
    serverExists();
    const client = await activate();
    assert.deepEqual(client.capabilities.at(-1)?.experimental, { other: 1, lspInfer: { definitions: true, references: true, suggestionReady: true } });
    assert.ok(client.requestHandlers.has(METHOD));
  });

  test('lspInfer.context.definitions off: not announced, and a request (from a server that asks anyway) gets an empty list', async () => {
    serverExists();
    fake.settings.set('lspInfer.context.definitions', { globalValue: false });
    const asked = provider({});
    const client = await activate();
    assert.deepEqual(client.capabilities.at(-1)?.experimental, { other: 1, lspInfer: { references: true, suggestionReady: true } });
    assert.deepEqual(await client.request(METHOD, params({ line: 0, character: 0 })), { definitions: [] });
    assert.deepEqual(asked, []);
    assert.deepEqual(client.initializationOptions.at(-1), { context: { definitions: false } }, 'the server gets the setting too');
    fake.set('lspInfer.context.definitions', true);
    assert.ok(fake.log.some((line) => /lspInfer\.context\.definitions is on: the server asks for definitions from its next start/.test(line)));
    await extension.restart(true);
    assert.deepEqual(lc.clients.at(-1)!.capabilities.at(-1)?.experimental, { other: 1, lspInfer: { definitions: true, references: true, suggestionReady: true } });
  });

  test('asks VS Code\'s definition providers at each position (UTF-16, as given), and reads a file that is not open from disk', async () => {
    serverExists();
    fake.files.set('/work/proj/geometry.ts', GEOMETRY);
    const asked = provider({
      '3:12': [{ originSelectionRange: range(3, 10, 3, 18), targetUri: Uri.file('/work/proj/geometry.ts'), targetRange: range(0, 0, 3, 1), targetSelectionRange: range(1, 16, 1, 24) }],
      '4:2': [{ uri: Uri.file('/work/proj/geometry.ts'), range: range(1, 16, 1, 24) }],
      '5:0': undefined,
      '6:0': new Error('no provider'),
    });
    const client = await activate();
    const answer = await client.request(METHOD, params({ line: 3, character: 12 }, { line: 4, character: 2 }, { line: 5, character: 0 }, { line: 6, character: 0 }));
    const text = GEOMETRY.split('\n').slice(1).join('\n');
    assert.deepEqual(answer, {
      definitions: [
        { uri: 'file:///work/proj/geometry.ts', range: range(1, 16, 1, 24), text, above: '/** The distance between two points. */' },
        { uri: 'file:///work/proj/geometry.ts', range: range(1, 16, 1, 24), text, above: '/** The distance between two points. */' },
        null,
        null,
      ],
    });
    assert.deepEqual(
      asked.map((a) => [a.uri, a.position.line, a.position.character]),
      [['file:///work/proj/main.ts', 3, 12], ['file:///work/proj/main.ts', 4, 2], ['file:///work/proj/main.ts', 5, 0], ['file:///work/proj/main.ts', 6, 0]],
    );
    assert.ok(asked.every((a) => a.position instanceof Position), 'a vscode.Position');
    assert.deepEqual(fake.openedDocuments, [], 'not opened as a document (the client would sync it to the server)');
    assert.ok(fake.fileReads.includes('/work/proj/geometry.ts'));
  });

  test('an open target: the editor\'s copy, unsaved edits and all; another scheme through openTextDocument', async () => {
    serverExists();
    fake.files.set('/work/proj/geometry.ts', GEOMETRY);
    fake.textDocuments = [new FakeDocument(Uri.file('/work/proj/geometry.ts'), 'edited\nin the editor') as never];
    fake.files.set('/lib.d.ts', 'declare function f(): void;');
    provider({
      '0:0': [{ uri: Uri.file('/work/proj/geometry.ts'), range: range(1, 0, 1, 2) }],
      '1:0': [{ uri: Uri.parse('vscode-vfs://lib.d.ts'), range: range(0, 0, 0, 1) }],
    });
    const client = await activate();
    const answer = (await client.request(METHOD, params({ line: 0, character: 0 }, { line: 1, character: 0 }))) as { definitions: { text: string }[] };
    assert.deepEqual(answer.definitions.map((d) => d.text), ['in the editor', 'declare function f(): void;']);
    assert.deepEqual(fake.fileReads, []);
    assert.deepEqual(fake.openedDocuments, ['vscode-vfs:/lib.d.ts']);
  });

  test('an unreadable or too large target, or a closed untitled one: null for it', async () => {
    serverExists();
    fake.files.set('/work/proj/huge.ts', 'x'.repeat(17 * 1024 * 1024));
    fake.files.set('/Untitled-1', 'function f() {}');
    provider({
      '0:0': [{ uri: Uri.file('/work/proj/missing.ts'), range: range(0, 0, 0, 1) }],
      '1:0': [{ uri: Uri.file('/work/proj/huge.ts'), range: range(0, 0, 0, 1) }],
      '2:0': [{ uri: Uri.parse('untitled:Untitled-1'), range: range(0, 0, 0, 1) }],
    });
    const client = await activate();
    const answer = await client.request(METHOD, params({ line: 0, character: 0 }, { line: 1, character: 0 }, { line: 2, character: 0 }));
    assert.deepEqual(answer, { definitions: [null, null, null] });
    assert.deepEqual(fake.fileReads, [], 'the huge file is not read');
    assert.deepEqual(fake.openedDocuments, [], 'no new untitled editor');
  });

  test('bounded in time: after 1 s (or context.definitionsMs, if longer) the answer goes with nulls for the rest', async () => {
    serverExists();
    fake.files.set('/work/proj/geometry.ts', GEOMETRY);
    let slow = false;
    fake.commands.set('vscode.executeDefinitionProvider', async (...args: unknown[]) => {
      const position = args[1] as Position;
      if (position.line === 1) {
        slow = true;
        return new Promise(() => {}); // a language server that never answers
      }
      return [{ uri: Uri.file('/work/proj/geometry.ts'), range: range(1, 0, 1, 1) }];
    });
    const client = await activate();
    const answer = client.request(METHOD, params({ line: 0, character: 0 }, { line: 1, character: 0 }));
    await flush();
    assert.ok(slow);
    const timer = timers.find((t) => t.ms === 1000);
    assert.ok(timer, 'a 1 s bound');
    timers = timers.filter((t) => t !== timer);
    timer.run();
    const result = (await answer) as { definitions: unknown[] };
    assert.equal(result.definitions.length, 2);
    assert.notEqual(result.definitions[0], null);
    assert.equal(result.definitions[1], null);

    fake.set('lspInfer.context.definitionsMs', 3000);
    void client.request(METHOD, params({ line: 1, character: 0 }));
    await flush();
    assert.ok(timers.some((t) => t.ms === 3000), 'the server waits longer: so does the extension');
  });

  test('a request to a replaced client, or malformed params: an empty list, never an error', async () => {
    serverExists();
    const asked = provider({});
    const first = await activate();
    assert.deepEqual(await first.request(METHOD, { positions: 'no' }), { definitions: [] });
    await extension.restart(true);
    assert.notEqual(lc.clients.at(-1), first);
    assert.deepEqual(await first.request(METHOD, params({ line: 0, character: 0 })), { definitions: [] });
    assert.deepEqual(asked, []);
  });
});

describe('where a name is used (lspInfer/references)', () => {
  const METHOD = 'lspInfer/references';
  const PROVIDER = 'vscode.executeReferenceProvider';
  const URI = Uri.file('/work/proj/shapes.go');
  const TEXT = 'package shapes\n\nfunc area(größe int) int {\n\treturn größe * größe\n}\n';
  const range = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });
  const params = (version: number, line = 2, character = 10) => ({ textDocument: { uri: URI.toString(), version }, position: { line, character } });
  /** VS Code's reference providers (UTF-16 ranges); what they were asked, with the document's version then. */
  function provider(answer: unknown, document?: FakeDocument): { uri: string; position: Position; version: number | undefined }[] {
    const asked: { uri: string; position: Position; version: number | undefined }[] = [];
    fake.commands.set(PROVIDER, async (...args: unknown[]) => {
      const [uri, position] = args as [Uri, Position];
      asked.push({ uri: uri.toString(), position, version: document?.version });
      if (answer instanceof Error) {
        throw answer;
      }
      return typeof answer === 'function' ? (answer as () => unknown)() : answer;
    });
    return asked;
  }
  /** `größe` at line 2 (the parameter) and twice on line 3, as UTF-16 Locations; one in another file. */
  const FOUND = [
    { uri: URI, range: range(3, 16, 3, 21) },
    { uri: Uri.file('/work/proj/other.go'), range: range(0, 0, 0, 5) },
    { uri: URI, range: range(2, 10, 2, 15) },
    { uri: URI, range: range(3, 8, 3, 13) },
    { uri: URI, range: range(2, 10, 2, 15) },
  ];
  function open(version = 7): FakeDocument {
    const document = new FakeDocument(URI, TEXT, 'go');
    document.version = version;
    fake.textDocuments = [document as never];
    return document;
  }

  test('announced with next edits on (the default), beside definitions and suggestionReady; the handler registered', async () => {
    serverExists();
    const client = await activate();
    assert.deepEqual(client.capabilities.at(-1)?.experimental, { other: 1, lspInfer: { definitions: true, references: true, suggestionReady: true } });
    assert.ok(client.requestHandlers.has(METHOD));
  });

  test('lspInfer.nextEdit.enabled off: not announced, a request gets null without asking; on again: from the next start', async () => {
    serverExists();
    fake.settings.set('lspInfer.nextEdit.enabled', { globalValue: false });
    open();
    const asked = provider(FOUND);
    const client = await activate();
    assert.deepEqual(client.capabilities.at(-1)?.experimental, { other: 1, lspInfer: { definitions: true, suggestionReady: true } });
    assert.equal(await client.request(METHOD, params(7)), null);
    assert.deepEqual(asked, []);
    fake.set('lspInfer.nextEdit.enabled', true);
    assert.ok(fake.log.some((line) => /lspInfer\.nextEdit\.enabled is on: the server asks for references from its next start/.test(line)));
    await extension.restart(true);
    const second = lc.clients.at(-1)!;
    assert.deepEqual(second.capabilities.at(-1)?.experimental, { other: 1, lspInfer: { definitions: true, references: true, suggestionReady: true } });
    assert.deepEqual(await second.request(METHOD, params(7)), { references: [range(2, 10, 2, 15), range(3, 8, 3, 13), range(3, 16, 3, 21)] });
  });

  test('turned off while the server runs: null, nothing asked', async () => {
    serverExists();
    open();
    const asked = provider(FOUND);
    const client = await activate();
    fake.set('lspInfer.nextEdit.enabled', false);
    assert.equal(await client.request(METHOD, params(7)), null);
    assert.deepEqual(asked, []);
  });

  test('asks VS Code\'s reference providers at the position, for the document at the version asked; this document\'s ranges, deduplicated and sorted', async () => {
    serverExists();
    const document = open(7);
    const asked = provider(FOUND, document);
    const client = await activate();
    const answer = await client.request(METHOD, params(7, 3, 9));
    assert.deepEqual(answer, { references: [range(2, 10, 2, 15), range(3, 8, 3, 13), range(3, 16, 3, 21)] });
    assert.deepEqual(asked.map((a) => [a.uri, a.position.line, a.position.character, a.version]), [['file:///work/proj/shapes.go', 3, 9, 7]]);
    assert.ok(asked[0].position instanceof Position, 'a vscode.Position');
    assert.ok(!timers.some((t) => t.ms === 4000), 'the bound is let go once answered');
    assert.ok(fake.log.some((line) => line.includes('lspInfer/references: found (3)')), fake.log.join('\n'));
  });

  test('the document at another version, or not open: null, and the providers are not asked', async () => {
    serverExists();
    const document = open(8);
    const asked = provider(FOUND, document);
    const client = await activate();
    assert.equal(await client.request(METHOD, params(7)), null, 'edited since the server asked');
    fake.textDocuments = [];
    assert.equal(await client.request(METHOD, params(8)), null, 'closed');
    assert.deepEqual(asked, []);
  });

  test('the providers fail, find nothing here, or give malformed answers: null, never an error', async () => {
    serverExists();
    open();
    const client = await activate();
    for (const answer of [new Error('no reference provider'), undefined, [], [{ uri: Uri.file('/work/proj/other.go'), range: range(0, 0, 0, 5) }], 'nonsense']) {
      provider(answer);
      assert.equal(await client.request(METHOD, params(7)), null, String(answer));
    }
    assert.equal(await client.request(METHOD, { textDocument: { uri: URI.toString() } }), null, 'malformed params');
  });

  test('bounded: a provider that does not answer within 4 s gets null', async () => {
    serverExists();
    open();
    provider(() => new Promise(() => {}));
    const client = await activate();
    const answer = client.request(METHOD, params(7));
    await flush();
    const timer = timers.find((t) => t.ms === 4000);
    assert.ok(timer, 'a 4 s bound');
    timers = timers.filter((t) => t !== timer);
    timer.run();
    assert.equal(await answer, null);
  });

  test('utf-8 negotiated: the position asked in UTF-16, the ranges answered in bytes', async () => {
    serverExists();
    open();
    const asked = provider(FOUND);
    const client = await activate();
    (client as { initializeResult: unknown }).initializeResult = { capabilities: { positionEncoding: 'utf-8' } };
    // Line 3 is "\treturn größe * größe": the second größe is at UTF-16 16–21, bytes 18–25 (ö, ß: 2 each).
    const answer = await client.request(METHOD, params(7, 3, 22));
    assert.deepEqual(asked.map((a) => [a.position.line, a.position.character]), [[3, 19]], 'byte 22 (at ß) is UTF-16 column 19');
    assert.deepEqual(answer, { references: [range(2, 10, 2, 17), range(3, 8, 3, 15), range(3, 18, 3, 25)] });
  });

  test('lsp-infer is never a reference provider itself: its middleware answers nothing, the server is not asked', async () => {
    serverExists();
    const client = await activate();
    let next = 0;
    const result = await client.clientOptions.middleware.provideReferences(new FakeDocument(URI, TEXT), new Position(2, 10), { includeDeclaration: true }, { isCancellationRequested: false }, () => {
      next += 1;
      return [{ uri: URI, range: range(0, 0, 0, 1) }];
    });
    assert.equal(result, undefined);
    assert.equal(next, 0);
  });

  test('a request to a replaced client: null, nothing asked', async () => {
    serverExists();
    open();
    const asked = provider(FOUND);
    const first = await activate();
    await extension.restart(true);
    assert.notEqual(lc.clients.at(-1), first);
    assert.equal(await first.request(METHOD, params(7)), null);
    assert.deepEqual(asked, []);
  });
});

describe('a better suggestion ready after a cold start (lspInfer/suggestionReady)', () => {
  const METHOD = 'lspInfer/suggestionReady';
  const TRIGGER = 'editor.action.inlineSuggest.trigger';
  const TEXT = 'import os\n\ndef add(a, b):\n    return ';
  const END = new Position(3, 11);
  /** The notification for where `editor`'s cursor is now (its document at its version). */
  const readyAt = (editor: FakeEditor, position = editor.selection.active) => ({
    textDocument: { uri: editor.document.uri.toString(), version: editor.document.version },
    position: { line: position.line, character: position.character },
  });
  const triggers = () => fake.executed.filter((e) => e.command === TRIGGER).length;

  /** The trigger kinds that reached the server (through the middleware's `next`). */
  let sent: Trigger[];
  let client: lc.LanguageClient;

  /** An inline completion request from VS Code at `editor`'s cursor. */
  function ask(editor: FakeEditor, triggerKind: Trigger): Promise<unknown> {
    return client.clientOptions.middleware.provideInlineCompletionItems(
      editor.document,
      editor.selection.active,
      { triggerKind, selectedCompletionInfo: undefined },
      { isCancellationRequested: false },
      async (_document: unknown, _position: unknown, context: { triggerKind: Trigger }) => {
        sent.push(context.triggerKind);
        return { items: [] };
      },
    );
  }

  /** Started, with VS Code's trigger command asking again at the active editor's cursor, as Invoke. */
  async function start(): Promise<FakeEditor> {
    serverExists();
    sent = [];
    client = await activate();
    fake.commands.set(TRIGGER, () => ask(fake.activeTextEditor as FakeEditor, Trigger.Invoke));
    const editor = new FakeEditor(new FakeDocument(Uri.file('/work/proj/a.py'), TEXT), END);
    fake.switchTo(editor);
    await ask(editor, Trigger.Automatic); // typing's request: the cold start, answered empty
    return editor;
  }

  test('announced in the initialize capabilities, with definitions off too', async () => {
    serverExists();
    fake.settings.set('lspInfer.context.definitions', { globalValue: false });
    const started = await activate();
    assert.deepEqual(started.capabilities.at(-1)?.experimental, { other: 1, lspInfer: { references: true, suggestionReady: true } });
    assert.ok(started.notificationHandlers.has(METHOD));
  });

  test('the cursor still there: inline suggestions asked again, and that request goes to the server as Automatic', async () => {
    const editor = await start();
    client.notify(METHOD, readyAt(editor));
    await flush();
    assert.equal(triggers(), 1);
    assert.deepEqual(sent, [Trigger.Automatic, Trigger.Automatic], "the trigger's Invoke request went as Automatic");
    assert.ok(fake.log.some((line) => line.startsWith(`debug ${METHOD}: asking again at 3:11 of file:///work/proj/a.py`)));
    // The user's own Alt+] later, at the same place: Invoked, as always.
    await ask(editor, Trigger.Invoke);
    assert.deepEqual(sent.at(-1), Trigger.Invoke);
  });

  test('an Automatic request at that place after the trigger: sent as it is, and it takes the re-ask', async () => {
    const editor = await start();
    fake.commands.set(TRIGGER, () => ask(editor, Trigger.Automatic));
    client.notify(METHOD, readyAt(editor));
    await flush();
    assert.deepEqual(sent, [Trigger.Automatic, Trigger.Automatic]);
    await ask(editor, Trigger.Invoke);
    assert.deepEqual(sent.at(-1), Trigger.Invoke, 'a later Alt+] there is the user\'s');
  });

  test('the user moved on: another document, an edit, a moved cursor, a selection, more cursors, no editor: nothing asked', async () => {
    const editor = await start();
    const other = new FakeEditor(new FakeDocument(Uri.file('/work/proj/b.py'), TEXT), END);
    const cases: [string, () => unknown][] = [
      ['another document in front', () => fake.switchTo(other)],
      ['the document edited since (a newer version)', () => void (editor.document.version += 1)],
      ['the cursor moved', () => fake.moveCursor(editor, new Position(3, 4))],
      ['a selection ending there', () => (editor.selection = { anchor: new Position(3, 0), active: END })],
      ['more cursors', () => (editor.moreSelections = [{ anchor: new Position(0, 0), active: new Position(0, 0) }])],
      ['no editor', () => fake.switchTo(undefined)],
    ];
    for (const [what, moveOn] of cases) {
      const params = readyAt(editor, END);
      moveOn();
      client.notify(METHOD, params);
      await flush();
      assert.equal(triggers(), 0, what);
      // Back to where it was, for the next case.
      editor.selection = { active: END };
      editor.moreSelections = [];
      fake.switchTo(editor);
    }
    assert.equal(timers.filter((t) => t.ms === 2000).length, 0, 'nothing pending');
  });

  test('inline suggestions off (VS Code\'s editor.inlineSuggest.enabled, or lsp-infer\'s completions): nothing asked', async () => {
    const editor = await start();
    fake.set('editor.inlineSuggest.enabled', false);
    client.notify(METHOD, readyAt(editor));
    fake.set('editor.inlineSuggest.enabled', true);
    fake.set('lspInfer.completion.enabled', false);
    client.notify(METHOD, readyAt(editor));
    await flush();
    assert.equal(triggers(), 0);
    fake.set('lspInfer.completion.enabled', true);
    client.notify(METHOD, readyAt(editor));
    await flush();
    assert.equal(triggers(), 1, 'on again');
  });

  test('malformed params, or a notification from a replaced server: ignored, never an exception', async () => {
    const editor = await start();
    const good = readyAt(editor);
    for (const params of [
      undefined,
      null,
      'ready',
      {},
      { textDocument: good.textDocument },
      { position: good.position },
      { textDocument: { uri: good.textDocument.uri }, position: good.position },
      { textDocument: { ...good.textDocument, version: '1' }, position: good.position },
      { textDocument: { ...good.textDocument, uri: 7 }, position: good.position },
      { textDocument: good.textDocument, position: { line: 3 } },
      { textDocument: good.textDocument, position: { line: 3, character: -1 } },
    ]) {
      assert.doesNotThrow(() => client.notify(METHOD, params), JSON.stringify(params));
    }
    const old = client;
    await extension.restart(true);
    old.notify(METHOD, good);
    await flush();
    assert.equal(triggers(), 0);
  });

  test('an Invoked request that is not the re-ask stays Invoked: elsewhere, or after 2 s without the trigger\'s request', async () => {
    const editor = await start();
    fake.commands.set(TRIGGER, () => undefined); // VS Code did not ask (the editor lost focus, …)
    client.notify(METHOD, readyAt(editor));
    await flush();
    assert.equal(triggers(), 1);
    fake.type(editor, 'a');
    await ask(editor, Trigger.Invoke); // Alt+] after typing: another version
    assert.deepEqual(sent.at(-1), Trigger.Invoke);

    client.notify(METHOD, readyAt(editor));
    await flush();
    const expiry = timers.find((t) => t.ms === 2000);
    assert.ok(expiry, 'the re-ask is dropped after 2 s');
    timers = timers.filter((t) => t !== expiry);
    expiry.run();
    await ask(editor, Trigger.Invoke); // Alt+] at the same place, later
    assert.deepEqual(sent.at(-1), Trigger.Invoke);
  });

  test('the trigger command fails: logged, the re-ask forgotten', async () => {
    const editor = await start();
    fake.commands.set(TRIGGER, () => {
      throw new Error('no focused editor');
    });
    client.notify(METHOD, readyAt(editor));
    await flush();
    assert.ok(fake.log.some((line) => line === `debug ${TRIGGER}: no focused editor`));
    assert.equal(timers.filter((t) => t.ms === 2000).length, 0);
    await ask(editor, Trigger.Invoke);
    assert.deepEqual(sent.at(-1), Trigger.Invoke);
  });
});

describe('next-edit suggestions (lspInfer/nextEdit)', () => {
  const METHOD = 'lspInfer/nextEdit';
  const TEXT = 'def area(wdth, height):\n    return wdth * height\n\n\ndef double(wdth):\n    return wdth * 2\n';
  const URI = 'file:///work/proj/area.py';
  /** The server's answer for the rename on line 1 (wdth → width) at `version`. */
  const renameAnswer = (version: number, id = 'ne-1') => ({
    edits: [{ range: { start: { line: 1, character: 11 }, end: { line: 1, character: 15 } }, text: 'width' }],
    id,
    kind: 'rename',
    version,
    label: 'rename wdth → width (1 more)',
  });
  const EMPTY = (version: number) => ({ edits: [], id: null, kind: null, version, label: null });
  const asked = (client: lc.LanguageClient) => client.requests.filter((r) => r.method === METHOD);
  const told = (client: lc.LanguageClient) => client.notifications.filter((n) => /NextEdit$/.test(n.method));
  const contextKey = () => fake.executed.filter((e) => e.command === 'setContext' && e.args[0] === 'lspInfer.nextEditVisible').map((e) => e.args[1]);
  const style = (test: (options: Record<string, any>) => boolean) => {
    const found = fake.decorationTypes.find((type) => test(type.options));
    assert.ok(found, 'a decoration type');
    return found;
  };
  const removedStyle = () => style((o) => o.textDecoration === 'line-through');
  const insertedStyle = () => style((o) => o.after !== undefined && o.after.margin === undefined);
  const hintStyle = () => style((o) => o.after?.margin !== undefined);
  /** What `editor` shows of the next edit: struck-through ranges, ghost texts, the hint. */
  const drawn = (editor: FakeEditor) => ({
    removed: (editor.decorations.get(removedStyle()) ?? []).map((r: any) => [r.start.line, r.start.character, r.end.line, r.end.character]),
    inserted: (editor.decorations.get(insertedStyle()) ?? []).map((d: any) => [d.range.start.line, d.range.start.character, d.renderOptions.after.contentText]),
    hint: (editor.decorations.get(hintStyle()) ?? []).map((d: any) => [d.range.start.line, d.renderOptions.after.contentText]),
  });
  const NOTHING = { removed: [], inserted: [], hint: [] };
  const pauses = () => timers.filter((t) => t.ms === 300);
  /** The user pauses: the pause timer runs, and the request's answer arrives. */
  async function pause(): Promise<void> {
    const [timer] = pauses();
    assert.ok(timer, 'a pause is pending');
    timers = timers.filter((t) => t !== timer);
    timer.run();
    for (let i = 0; i < 4; i++) {
      await flush();
    }
  }

  let client: lc.LanguageClient;
  let answers: unknown[];

  /** Started, area.py in front, the cursor after `w` of the first `wdth`; the server answers from `answers`. */
  async function start(text = TEXT, cursor = new Position(0, 10)): Promise<FakeEditor> {
    serverExists();
    answers = [];
    lc.setAnswer((method) => (method === METHOD ? (answers.shift() ?? EMPTY(0)) : null));
    client = await activate();
    const editor = new FakeEditor(new FakeDocument(Uri.file('/work/proj/area.py'), text), cursor);
    fake.switchTo(editor);
    return editor;
  }

  /** Rename wdth → width on line 1 (type `i` after the `w`), pause, and get the rename drawn. */
  async function renamed(): Promise<FakeEditor> {
    const editor = await start();
    fake.type(editor, 'i');
    answers.push(renameAnswer(2));
    await pause();
    return editor;
  }

  test('after an edit and a 300 ms pause: asked at the cursor, for that version', async () => {
    const editor = await start();
    fake.type(editor, 'i');
    assert.equal(asked(client).length, 0, 'not before the pause');
    fake.type(editor, 'x'); // the next keystroke restarts the one pause
    assert.equal(pauses().length, 1);
    assert.equal(NEXT_EDIT_PAUSE_MS, 300);
    await pause();
    assert.deepEqual(asked(client), [{ method: METHOD, params: { textDocument: { uri: URI, version: 3 }, position: { line: 0, character: 12 } } }]);
    assert.ok(client.requestTokens.at(-1), 'with a cancellation token');
    assert.deepEqual(drawn(editor), NOTHING, 'an empty answer draws nothing');
    assert.deepEqual(told(client), []);
  });

  test('the answer drawn: the old text struck through, the new as ghost text after it; the context key set; shown reported', async () => {
    const editor = await renamed();
    assert.deepEqual(drawn(editor), { removed: [[1, 11, 1, 15]], inserted: [[1, 15, 'width']], hint: [] });
    assert.deepEqual(contextKey(), [true]);
    assert.deepEqual(told(client), [{ method: 'lspInfer/didShowNextEdit', params: { id: 'ne-1' } }]);
    // Themable colors: a red of its own (package.json's colors), the ghost text's.
    assert.equal(removedStyle().options.color.id, 'lspInfer.nextEdit.removedForeground');
    assert.equal(insertedStyle().options.after.color.id, 'editorGhostText.foreground');
    const colors = PKG.contributes.colors.map((c: { id: string }) => c.id);
    assert.ok(colors.includes('lspInfer.nextEdit.removedForeground'));
    // The cursor moves (no edit): redrawn, not reported again.
    fake.moveCursor(editor, new Position(0, 3));
    assert.equal(told(client).length, 1);
  });

  test('Tab: the first press goes to the edit, the second applies the group as one edit, accepted', async () => {
    const editor = await renamed();
    await fake.commands.get('lsp-infer.nextEdit.accept')!();
    assert.deepEqual(editor.selection.active, new Position(1, 11), 'the cursor at the edit');
    assert.equal(editor.revealed.length, 1);
    assert.equal(editor.document.text, TEXT.replace('wdth', 'width'), 'nothing applied yet');
    assert.deepEqual(drawn(editor).removed, [[1, 11, 1, 15]], 'still shown');
    await fake.commands.get('lsp-infer.nextEdit.accept')!();
    await flush();
    assert.equal(editor.document.text, 'def area(width, height):\n    return width * height\n\n\ndef double(wdth):\n    return wdth * 2\n');
    assert.equal(fake.appliedEdits.length, 1, 'one WorkspaceEdit (one undo step)');
    assert.deepEqual(drawn(editor), NOTHING);
    assert.deepEqual(contextKey(), [true, false]);
    assert.deepEqual(told(client), [
      { method: 'lspInfer/didShowNextEdit', params: { id: 'ne-1' } },
      { method: 'lspInfer/didAcceptNextEdit', params: { id: 'ne-1' } },
    ]);
    assert.equal(pauses().length, 1, 'the applied edit is an edit: the next pause asks again');
  });

  test('a group applies whole, in one edit, when the cursor is on its first line', async () => {
    const editor = await start();
    fake.type(editor, 'i');
    answers.push({
      ...renameAnswer(2),
      edits: [
        { range: { start: { line: 0, character: 4 }, end: { line: 0, character: 8 } }, text: 'surface' },
        { range: { start: { line: 1, character: 11 }, end: { line: 1, character: 15 } }, text: 'width' },
      ],
    });
    await pause();
    await fake.commands.get('lsp-infer.nextEdit.accept')!();
    assert.equal(editor.document.text.split('\n').slice(0, 2).join('\n'), 'def surface(width, height):\n    return width * height');
    assert.equal(fake.appliedEdits.length, 1);
    assert.equal(fake.appliedEdits[0].replacements.length, 2);
  });

  test('VS Code refuses the edit (the document changed meanwhile): rejected, not accepted', async () => {
    const editor = await renamed();
    editor.selection = { active: new Position(1, 0) };
    fake.applyEditFails = true;
    await fake.commands.get('lsp-infer.nextEdit.accept')!();
    assert.deepEqual(told(client).at(-1), { method: 'lspInfer/didRejectNextEdit', params: { id: 'ne-1' } });
    assert.deepEqual(drawn(editor), NOTHING);
  });

  test('Esc dismisses it: cleared, rejected', async () => {
    const editor = await renamed();
    await fake.commands.get('lsp-infer.nextEdit.dismiss')!();
    assert.deepEqual(drawn(editor), NOTHING);
    assert.deepEqual(contextKey(), [true, false]);
    assert.deepEqual(told(client).at(-1), { method: 'lspInfer/didRejectNextEdit', params: { id: 'ne-1' } });
    assert.equal(editor.document.text, TEXT.replace('wdth', 'width'));
  });

  test('typing on, switching editors, or closing the document clears it (rejected)', async () => {
    let editor = await renamed();
    fake.type(editor, 'x');
    assert.deepEqual(drawn(editor), NOTHING);
    assert.deepEqual(told(client).at(-1), { method: 'lspInfer/didRejectNextEdit', params: { id: 'ne-1' } });
    await loaded.deactivate();

    editor = await renamed();
    fake.switchTo(new FakeEditor(new FakeDocument(Uri.file('/work/proj/b.py'), 'x = 1\n')));
    assert.deepEqual(drawn(editor), NOTHING);
    assert.deepEqual(told(client).at(-1), { method: 'lspInfer/didRejectNextEdit', params: { id: 'ne-1' } });
    await loaded.deactivate();

    editor = await renamed();
    fake.documentClosed.fire({ uri: editor.document.uri });
    assert.deepEqual(drawn(editor), NOTHING);
    assert.deepEqual(told(client).at(-1), { method: 'lspInfer/didRejectNextEdit', params: { id: 'ne-1' } });
  });

  test('a keystroke cancels the request in flight; a late answer, or one for another version, is not drawn', async () => {
    const editor = await start();
    let release: (value: unknown) => void = () => undefined;
    lc.setAnswer((method) => (method === METHOD ? new Promise((resolve) => (release = resolve)) : null));
    fake.type(editor, 'i');
    await pause();
    const token = client.requestTokens.at(-1)!;
    assert.equal(token.isCancellationRequested, false);
    fake.type(editor, 'x');
    assert.equal(token.isCancellationRequested, true, 'cancelled by the next edit');
    release(renameAnswer(2));
    await flush();
    await flush();
    assert.deepEqual(drawn(editor), NOTHING);
    assert.deepEqual(told(client), []);
    // An answer for another version than the one asked (the document is at 3): not drawn.
    lc.setAnswer((method) => (method === METHOD ? renameAnswer(2) : null));
    await pause();
    assert.deepEqual(asked(client).at(-1)?.params, { textDocument: { uri: URI, version: 3 }, position: { line: 0, character: 12 } });
    assert.deepEqual(drawn(editor), NOTHING);
    assert.deepEqual(told(client), []);
  });

  test('a change without content (the dirty flag, a save) is not an edit: it stays, nothing asked', async () => {
    const editor = await renamed();
    fake.documentChanged.fire({ document: editor.document, contentChanges: [] });
    assert.equal(pauses().length, 0);
    assert.equal(told(client).length, 1);
    assert.deepEqual(drawn(editor).removed, [[1, 11, 1, 15]]);
  });

  test('the first edit off screen: a hint at the cursor\'s line; Tab goes there (revealed), the hint goes', async () => {
    const lines = ['def area(wdth, height):', ...Array.from({ length: 60 }, (_, i) => `    x${i} = ${i}`), '    return wdth * height', ''];
    const editor = await start(lines.join('\n'));
    editor.visibleRanges = [new (fake.module.Range as any)(0, 0, 30, 0)];
    fake.type(editor, 'i');
    answers.push({ ...renameAnswer(2), edits: [{ range: { start: { line: 61, character: 11 }, end: { line: 61, character: 15 } }, text: 'width' }] });
    await pause();
    assert.deepEqual(drawn(editor).hint, [[0, 'rename wdth → width (1 more) — line 62, Tab to go']]);
    await fake.commands.get('lsp-infer.nextEdit.accept')!();
    assert.deepEqual(editor.selection.active, new Position(61, 11));
    assert.equal(editor.revealed[0].type, 2 /* InCenterIfOutsideViewport */);
    // VS Code reports the cursor move before the scroll: the hint does not flash on line 61.
    fake.moveCursor(editor, new Position(61, 11), Kind.Command);
    assert.deepEqual(drawn(editor).hint, [], 'revealed: no hint while the scroll is on its way');
    fake.scroll(editor, 45, 75);
    assert.deepEqual(drawn(editor).hint, [], 'on screen now: no hint');
    assert.deepEqual(drawn(editor).removed, [[61, 11, 61, 15]]);
  });

  test('Tab with nothing shown (the context key a moment late) is VS Code\'s own Tab', async () => {
    await start();
    await fake.commands.get('lsp-infer.nextEdit.accept')!();
    assert.deepEqual(fake.executed.at(-1), { command: 'tab', args: [] });
  });

  test('lspInfer.nextEdit.enabled off: nothing asked, and what is shown goes; sent to the server like the other settings', async () => {
    let editor = await renamed();
    fake.set('lspInfer.nextEdit.enabled', false);
    assert.deepEqual(drawn(editor), NOTHING);
    assert.deepEqual(told(client).at(-1), { method: 'lspInfer/didRejectNextEdit', params: { id: 'ne-1' } });
    fake.type(editor, 'x');
    assert.equal(pauses().length, 0, 'no pause, no request');
    assert.deepEqual(extension.serverSettings(), { nextEdit: { enabled: false } });
    await loaded.deactivate();
    fake.settings.delete('lspInfer.nextEdit.enabled');
    editor = await renamed();
    assert.equal(told(client).length, 1, 'on again');
  });

  test('only the active editor\'s synced document is asked about; not while the server is down', async () => {
    const editor = await start();
    const other = new FakeDocument(Uri.file('/work/proj/b.py'), 'x = 1\n');
    fake.documentChanged.fire({ document: other, contentChanges: [{ text: 'y' }] });
    assert.equal(pauses().length, 0, 'not the active editor\'s document');
    const git = new FakeEditor(new FakeDocument(Uri.parse('git:/work/proj/area.py'), TEXT));
    fake.switchTo(git);
    fake.type(git, 'i');
    assert.equal(pauses().length, 0, 'a document the client does not sync');
    fake.switchTo(editor);
    client.state = lc.State.Starting;
    fake.type(editor, 'i');
    assert.equal(pauses().length, 0, 'the server is not running');
  });

  test('a restarted server: the old suggestion goes without a word to the new one', async () => {
    const editor = await renamed();
    await fake.commands.get('lsp-infer.restartServer')!();
    const second = lc.clients.at(-1)!;
    assert.notEqual(second, client);
    assert.deepEqual(drawn(editor), NOTHING);
    assert.deepEqual(told(second), []);
    assert.equal(told(client).length, 1, 'only the shown');
  });

  test('deactivation clears it and disposes the decoration types', async () => {
    const editor = await renamed();
    await loaded.deactivate();
    assert.deepEqual(drawn(editor), NOTHING);
    assert.ok(fake.decorationTypes.every((type) => type.disposed));
  });
});
