import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  COMMANDS,
  menuItems,
  openFileUris,
  refactorFileParams,
  refactorFilesParams,
  SERVER_COMMANDS,
  serverHasCommand,
  toggleTarget,
  validateInstruction,
} from '../src/commands';

const doc = (uri: string, isClosed = false) => ({ uri: { scheme: uri.split(':')[0], toString: () => uri }, isClosed });

describe('refactor requests', () => {
  test('lspInfer.refactorFile gets ONE argument {uri, instruction}', () => {
    assert.deepEqual(refactorFileParams('file:///p/a.py', '  add type hints '), {
      command: 'lspInfer.refactorFile',
      arguments: [{ uri: 'file:///p/a.py', instruction: 'add type hints' }],
    });
  });

  test('lspInfer.refactorFiles gets ONE argument {uris, instruction}', () => {
    assert.deepEqual(refactorFilesParams(['file:///p/a.py', 'file:///p/b.py'], 'x'), {
      command: 'lspInfer.refactorFiles',
      arguments: [{ uris: ['file:///p/a.py', 'file:///p/b.py'], instruction: 'x' }],
    });
  });

  test('the extension\'s command ids never collide with the server\'s', () => {
    const ours = Object.values(COMMANDS) as string[];
    for (const theirs of Object.values(SERVER_COMMANDS)) {
      assert.ok(!ours.includes(theirs), theirs);
    }
    assert.ok(ours.every((id) => id.startsWith('lsp-infer.')));
  });

  test('open files: file scheme only, open, each once', () => {
    const docs = [doc('file:///a.py'), doc('untitled:Untitled-1'), doc('git:/a.py'), doc('file:///b.py', true), doc('file:///a.py'), doc('file:///c.ts')];
    assert.deepEqual(openFileUris(docs), ['file:///a.py', 'file:///c.ts']);
    assert.deepEqual(openFileUris([]), []);
  });

  test('an instruction must say something', () => {
    assert.ok(validateInstruction('   '));
    assert.equal(validateInstruction('rename x to y'), undefined);
  });

  test('serverHasCommand', () => {
    assert.equal(serverHasCommand(undefined, SERVER_COMMANDS.refactorFile), false);
    assert.equal(serverHasCommand(['lspInfer.refactorFile'], SERVER_COMMANDS.refactorFile), true);
    assert.equal(serverHasCommand(['lspInfer.refactorFile'], SERVER_COMMANDS.refactorFiles), false);
  });
});

describe('toggle target', () => {
  test('the most specific scope that sets completion.enabled, else user settings', () => {
    assert.equal(toggleTarget(undefined), 'global');
    assert.equal(toggleTarget({}), 'global');
    assert.equal(toggleTarget({ globalValue: false }), 'global');
    assert.equal(toggleTarget({ globalValue: true, workspaceValue: false }), 'workspace');
    assert.equal(toggleTarget({ workspaceValue: true, workspaceFolderValue: false }), 'workspaceFolder');
  });
});

describe('status bar menu', () => {
  test('offers every action, the toggle reflecting the current state', () => {
    const on = menuItems({ enabled: true, serverRunning: true, hasActiveFile: true, canRefactor: true });
    assert.deepEqual(
      on.map((item) => item.command),
      [COMMANDS.toggleCompletions, COMMANDS.showStats, COMMANDS.showOutput, COMMANDS.restartServer, COMMANDS.refactorFile, COMMANDS.refactorOpenFiles, COMMANDS.setTeamApiKey],
    );
    assert.match(on[0].label, /Turn completions off/);
    const off = menuItems({ enabled: false, serverRunning: false, hasActiveFile: false, canRefactor: false });
    assert.match(off[0].label, /Turn completions on/);
    assert.ok(!off.some((item) => item.command === COMMANDS.refactorFile), 'no file, no "refactor file"');
    assert.equal(off.find((item) => item.command === COMMANDS.refactorOpenFiles)?.description, 'needs the team tier');
    assert.equal(off.find((item) => item.command === COMMANDS.showStats)?.description, 'server not running');
  });
});
