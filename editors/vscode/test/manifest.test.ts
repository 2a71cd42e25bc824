/**
 * package.json against the code: the contributed settings are the settings table, the
 * contributed commands are the commands the extension registers, engines fit the client.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { COMMANDS } from '../src/commands';
import { NEXT_EDIT_CONTEXT_KEY } from '../src/nextEdit';
import { DEFAULT_COMMAND } from '../src/serverCommand';
import { SERVER_SETTINGS } from '../src/settings';

const ROOT = path.join(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const properties: Record<string, Record<string, unknown>> = Object.assign(
  {},
  ...pkg.contributes.configuration.map((group: { properties: object }) => group.properties),
);

function caret(range: string): number[] {
  const match = /^\^?(\d+)\.(\d+)\.(\d+)$/.exec(range);
  assert.ok(match, range);
  return match.slice(1).map(Number);
}

describe('package.json', () => {
  test('one typed property per server setting, with the same default, enum and bounds', () => {
    for (const spec of SERVER_SETTINGS) {
      const prop = properties[`lspInfer.${spec.key}`];
      assert.ok(prop, `lspInfer.${spec.key} is contributed`);
      assert.equal(prop.type, spec.type, spec.key);
      assert.deepEqual(prop.default, spec.default, spec.key);
      assert.deepEqual(prop.enum, spec.enum === undefined ? undefined : [...spec.enum], spec.key);
      assert.equal(prop.minimum, spec.minimum, spec.key);
      assert.equal(prop.maximum, spec.maximum, spec.key);
      assert.deepEqual(prop.items, spec.type === 'array' ? { type: 'string' } : undefined, spec.key);
      assert.ok(typeof (prop.markdownDescription ?? prop.description) === 'string', spec.key);
    }
  });

  test('every contributed setting is either a server setting or the extension\'s own', () => {
    const own = ['lspInfer.server.command', 'lspInfer.server.pythonPath', 'lspInfer.trace.server'];
    const known = new Set([...SERVER_SETTINGS.map((s) => `lspInfer.${s.key}`), ...own]);
    for (const key of Object.keys(properties)) {
      assert.ok(known.has(key), key);
    }
    assert.deepEqual(properties['lspInfer.server.command'].default, [...DEFAULT_COMMAND]);
    assert.deepEqual(properties['lspInfer.server.command'].type, ['array', 'string']);
    assert.equal(properties['lspInfer.server.pythonPath'].default, '');
    assert.ok(!Object.keys(properties).some((key) => /apikey/i.test(key)), 'no API key setting: SecretStorage only');
  });

  test('settings that run programs, send the API key or weaken exclusions are restricted in untrusted workspaces', () => {
    const restricted: string[] = pkg.capabilities.untrustedWorkspaces.restrictedConfigurations;
    // exclude: a workspace value replaces the user's list (VS Code does not merge arrays), so an
    // untrusted workspace could drop the user's own patterns. verifyTls: the API key goes with
    // every request to team.url.
    const keys = ['lspInfer.server.command', 'lspInfer.server.pythonPath', 'lspInfer.model.path', 'lspInfer.team.url', 'lspInfer.team.verifyTls', 'lspInfer.exclude'];
    assert.deepEqual([...restricted].sort(), [...keys].sort());
    for (const key of keys) {
      assert.ok(restricted.includes(key), key);
      assert.ok(key in properties, key);
    }
  });

  test('contributed commands = registered commands', () => {
    const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(contributed, Object.values(COMMANDS).sort());
    for (const c of pkg.contributes.commands) {
      assert.equal(c.category, 'lsp-infer');
    }
    const titles = pkg.contributes.commands.map((c: { category: string; title: string }) => `${c.category}: ${c.title}`);
    assert.ok(titles.includes('lsp-infer: Set Team API Key'));
  });

  test('next edits: Tab and Escape only while one is shown, never taken from inline suggestions or the suggest widget', () => {
    const binding = (command: string) => {
      const found = pkg.contributes.keybindings.filter((k: { command: string }) => k.command === command);
      assert.equal(found.length, 1, command);
      return found[0] as { key: string; when: string };
    };
    const accept = binding(COMMANDS.nextEditAccept);
    const dismiss = binding(COMMANDS.nextEditDismiss);
    assert.equal(accept.key, 'tab');
    assert.equal(dismiss.key, 'escape');
    for (const { when } of [accept, dismiss]) {
      const terms = when.split('&&').map((term) => term.trim());
      for (const term of [NEXT_EDIT_CONTEXT_KEY, 'editorTextFocus', '!inlineSuggestionVisible', '!suggestWidgetVisible']) {
        assert.ok(terms.includes(term), `${when}: ${term}`);
      }
    }
    // Tab also stays with snippets (their placeholders) and read-only editors.
    assert.ok(accept.when.includes('!inSnippetMode') && accept.when.includes('!editorReadonly'), accept.when);
    const colors = pkg.contributes.colors.map((c: { id: string }) => c.id);
    assert.deepEqual(colors, ['lspInfer.nextEdit.removedForeground']);
  });

  test('engines.vscode is at least what vscode-languageclient and @types/vscode need', () => {
    const client = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', 'vscode-languageclient', 'package.json'), 'utf8'));
    const types = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', '@types', 'vscode', 'package.json'), 'utf8'));
    const ours = caret(pkg.engines.vscode);
    const cmp = (a: number[], b: number[]) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
    assert.ok(cmp(ours, caret(client.engines.vscode)) >= 0, `${pkg.engines.vscode} vs client ${client.engines.vscode}`);
    assert.ok(cmp(ours, caret(types.version)) >= 0, `${pkg.engines.vscode} vs @types/vscode ${types.version}`);
  });

  test('bundled entry point and packaging', () => {
    assert.equal(pkg.main, './dist/extension.js');
    assert.ok(pkg.activationEvents.includes('onStartupFinished'));
    assert.match(pkg.scripts.package, /--no-dependencies/);
    const ignore = fs.readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8');
    for (const pattern of ['node_modules/**', 'src/**', 'test/**', 'out/**']) {
      assert.ok(ignore.split(/\r?\n/).includes(pattern), pattern);
    }
  });
});
