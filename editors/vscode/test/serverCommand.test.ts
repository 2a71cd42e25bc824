import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import {
  DEFAULT_COMMAND,
  expandVariables,
  findExecutable,
  formatCommand,
  type Host,
  INSTALL_HINT,
  nodeHost,
  resolveServerCommand,
  serverCommandLine,
  splitCommandLine,
} from '../src/serverCommand';

/** A POSIX machine whose executables are `files`; `other` exist but cannot be executed. */
function posixHost(files: string[], extra: Partial<Host> = {}, other: string[] = []): Host {
  return {
    platform: 'linux',
    env: { PATH: '/usr/local/bin:/usr/bin:/home/u/.local/bin' },
    homedir: '/home/u',
    workspaceFolder: '/work/proj',
    isExecutableFile: (file) => files.includes(file),
    exists: (file) => files.includes(file) || other.includes(file),
    ...extra,
  };
}

function windowsHost(files: string[]): Host {
  return {
    platform: 'win32',
    env: { Path: 'C:\\Python312\\Scripts;C:\\Windows', PATHEXT: '.COM;.EXE;.BAT;.CMD' },
    homedir: 'C:\\Users\\u',
    workspaceFolder: 'C:\\proj',
    isExecutableFile: (file) => files.map((f) => f.toLowerCase()).includes(file.toLowerCase()),
    exists: (file) => files.map((f) => f.toLowerCase()).includes(file.toLowerCase()),
  };
}

describe('serverCommandLine (settings → argv)', () => {
  test('default: lsp-infer serve', () => {
    assert.deepEqual(serverCommandLine(undefined, undefined), { ok: true, argv: ['lsp-infer', 'serve'], source: 'lspInfer.server.command' });
    assert.deepEqual(serverCommandLine([...DEFAULT_COMMAND], ''), { ok: true, argv: ['lsp-infer', 'serve'], source: 'lspInfer.server.command' });
  });

  test('an array is used as is', () => {
    const line = serverCommandLine(['/opt/venv/bin/lsp-infer', 'serve', '--log-file', '/tmp/l.log'], '');
    assert.deepEqual(line, { ok: true, argv: ['/opt/venv/bin/lsp-infer', 'serve', '--log-file', '/tmp/l.log'], source: 'lspInfer.server.command' });
  });

  test('a string is split like a shell would, quotes grouping words', () => {
    assert.deepEqual(serverCommandLine('lsp-infer serve', null), { ok: true, argv: ['lsp-infer', 'serve'], source: 'lspInfer.server.command' });
    assert.deepEqual(splitCommandLine('"/my models/bin/lsp-infer" serve'), ['/my models/bin/lsp-infer', 'serve']);
    assert.deepEqual(splitCommandLine("'C:\\Program Files\\x\\lsp-infer.exe'  serve "), ['C:\\Program Files\\x\\lsp-infer.exe', 'serve']);
    assert.deepEqual(splitCommandLine('a "" b'), ['a', '', 'b']);
    assert.deepEqual(splitCommandLine('   '), []);
  });

  test('pythonPath wins and runs the module', () => {
    assert.deepEqual(serverCommandLine(['whatever'], '/opt/venv/bin/python'), {
      ok: true,
      argv: ['/opt/venv/bin/python', '-m', 'lsp_infer', 'serve'],
      source: 'lspInfer.server.pythonPath',
    });
  });

  test('empty or wrongly typed settings are errors with a fix', () => {
    for (const bad of [[], '', '  ', ['']]) {
      const line = serverCommandLine(bad, '');
      assert.equal(line.ok, false, JSON.stringify(bad));
      assert.ok(!line.ok && /empty/.test(line.problem) && line.setting === 'lspInfer.server.command');
    }
    const typed = serverCommandLine([1, 2], '');
    assert.ok(!typed.ok && /list of strings/.test(typed.problem));
    const python = serverCommandLine(undefined, 42);
    assert.ok(!python.ok && python.setting === 'lspInfer.server.pythonPath');
  });
});

describe('resolveServerCommand', () => {
  test('a bare name is found on PATH', () => {
    const resolved = resolveServerCommand(undefined, '', posixHost(['/home/u/.local/bin/lsp-infer']));
    assert.deepEqual(resolved, { ok: true, command: '/home/u/.local/bin/lsp-infer', args: ['serve'], source: 'lspInfer.server.command' });
  });

  test('the first PATH entry wins', () => {
    const resolved = resolveServerCommand(undefined, '', posixHost(['/usr/bin/lsp-infer', '/home/u/.local/bin/lsp-infer']));
    assert.ok(resolved.ok && resolved.command === '/usr/bin/lsp-infer');
  });

  test('missing default executable: an error naming pip install and the settings', () => {
    const resolved = resolveServerCommand(undefined, '', posixHost([]));
    assert.equal(resolved.ok, false);
    if (!resolved.ok) {
      assert.match(resolved.problem, /`lsp-infer` is not on PATH/);
      assert.ok(resolved.fix.includes(INSTALL_HINT), resolved.fix);
      assert.match(resolved.fix, /lspInfer\.server\.command/);
      assert.match(resolved.fix, /lspInfer\.server\.pythonPath/);
      assert.equal(resolved.setting, 'lspInfer.server.command');
    }
  });

  test('a path that does not exist, and one that is not executable', () => {
    const missing = resolveServerCommand(['/opt/venv/bin/lsp-infer', 'serve'], '', posixHost([]));
    assert.ok(!missing.ok && /`\/opt\/venv\/bin\/lsp-infer` does not exist \(lspInfer\.server\.command\)/.test(missing.problem));
    const notExec = resolveServerCommand(['/opt/venv/bin/lsp-infer', 'serve'], '', posixHost([], {}, ['/opt/venv/bin/lsp-infer']));
    assert.ok(!notExec.ok && /is not an executable file/.test(notExec.problem));
  });

  test('a relative path is resolved against the workspace folder', () => {
    const resolved = resolveServerCommand(['.venv/bin/lsp-infer', 'serve'], '', posixHost(['/work/proj/.venv/bin/lsp-infer']));
    assert.ok(resolved.ok && resolved.command === '/work/proj/.venv/bin/lsp-infer');
  });

  test('~, ${userHome}, ${workspaceFolder} and ${env:X} are expanded', () => {
    const host = posixHost(['/home/u/venv/bin/python', '/work/proj/.venv/bin/lsp-infer'], { env: { PATH: '', VENV: '/home/u/venv' } });
    assert.ok(resolveServerCommand(undefined, '~/venv/bin/python', host).ok);
    assert.ok(resolveServerCommand(undefined, '${userHome}/venv/bin/python', host).ok);
    assert.ok(resolveServerCommand(undefined, '${env:VENV}/bin/python', host).ok);
    assert.ok(resolveServerCommand(['${workspaceFolder}/.venv/bin/lsp-infer', 'serve'], '', host).ok);
    assert.equal(expandVariables('${workspaceFolder}/x', { ...host, workspaceFolder: undefined }), '${workspaceFolder}/x');
  });

  test('pythonPath: resolved, and its own error when missing', () => {
    const ok = resolveServerCommand(undefined, '/opt/venv/bin/python', posixHost(['/opt/venv/bin/python']));
    assert.deepEqual(ok, { ok: true, command: '/opt/venv/bin/python', args: ['-m', 'lsp_infer', 'serve'], source: 'lspInfer.server.pythonPath' });
    const bare = resolveServerCommand(undefined, 'python3', posixHost(['/usr/bin/python3']));
    assert.ok(bare.ok && bare.command === '/usr/bin/python3');
    const missing = resolveServerCommand(undefined, '/opt/venv/bin/python', posixHost([]));
    assert.ok(!missing.ok);
    if (!missing.ok) {
      assert.match(missing.problem, /does not exist \(lspInfer\.server\.pythonPath\)/);
      assert.ok(missing.fix.includes(INSTALL_HINT));
      assert.equal(missing.setting, 'lspInfer.server.pythonPath');
    }
  });

  test('Windows: Path is case-insensitive and PATHEXT extensions are tried', () => {
    const resolved = resolveServerCommand(undefined, '', windowsHost(['C:\\Python312\\Scripts\\lsp-infer.exe']));
    assert.ok(resolved.ok, JSON.stringify(resolved));
    assert.equal(resolved.ok && resolved.command.toLowerCase(), 'c:\\python312\\scripts\\lsp-infer.exe');
    const python = resolveServerCommand(undefined, 'C:\\venv\\Scripts\\python', windowsHost(['C:\\venv\\Scripts\\python.exe']));
    assert.ok(python.ok);
    assert.ok(!resolveServerCommand(undefined, '', windowsHost([])).ok);
  });

  test('the real file system: an executable script in a temporary PATH directory', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsp-infer-test-'));
    try {
      const exe = path.join(dir, process.platform === 'win32' ? 'lsp-infer.cmd' : 'lsp-infer');
      fs.writeFileSync(exe, '#!/bin/sh\n');
      fs.chmodSync(exe, 0o755);
      const host = { ...nodeHost(undefined), env: { ...process.env, PATH: dir, Path: dir } };
      assert.equal(findExecutable('lsp-infer', host), exe);
      if (process.platform !== 'win32') {
        fs.chmodSync(exe, 0o644);
        assert.equal(findExecutable('lsp-infer', host), undefined, 'not executable');
      }
      assert.equal(findExecutable(dir, host), undefined, 'a directory is not an executable');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('formatCommand', () => {
  test('quotes only what needs it', () => {
    assert.equal(formatCommand('/usr/bin/lsp-infer', ['serve']), '/usr/bin/lsp-infer serve');
    assert.equal(formatCommand('/my models/python', ['-m', 'lsp_infer', 'serve']), '"/my models/python" -m lsp_infer serve');
  });
});
