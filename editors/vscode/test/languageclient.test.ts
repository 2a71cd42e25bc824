/**
 * What the installed vscode-languageclient does about textDocument/inlineCompletion, read from
 * its source: version 9 registers InlineCompletionItemFeature only in ProposedFeatures (so
 * `registerProposedFeatures()` is what enables it); 10 and later register it with the
 * built-in features. Either way, the extension's client asks for inline completions.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const LIB = path.join(__dirname, '..', '..', 'node_modules', 'vscode-languageclient', 'lib', 'common');

function between(source: string, start: string, end: string): string {
  const from = source.indexOf(start);
  assert.ok(from >= 0, start);
  const to = source.indexOf(end, from + start.length);
  return source.slice(from, to < 0 ? undefined : to);
}

test('the installed client registers InlineCompletionItemFeature (built in or as a proposed feature)', () => {
  const client = fs.readFileSync(path.join(LIB, 'client.js'), 'utf8');
  const version: string = JSON.parse(fs.readFileSync(path.join(LIB, '..', '..', 'package.json'), 'utf8')).version;
  const builtin = between(client, 'registerBuiltinFeatures()', 'registerProposedFeatures()');
  const proposed = between(client, 'function createAll(', 'ProposedFeatures.createAll = createAll');
  const inBuiltin = builtin.includes('InlineCompletionItemFeature');
  const inProposed = proposed.includes('InlineCompletionItemFeature');
  assert.ok(inBuiltin || inProposed, 'InlineCompletionItemFeature is registered somewhere');
  if (Number(version.split('.')[0]) <= 9) {
    assert.ok(inProposed && !inBuiltin, `${version}: proposed only`);
  } else {
    assert.ok(inBuiltin, `${version}: built in`);
  }
});

test('the feature announces the capability and sends textDocument/inlineCompletion', () => {
  const feature = fs.readFileSync(path.join(LIB, 'inlineCompletion.js'), 'utf8');
  assert.match(feature, /ensure\)\(\(0, features_1\.ensure\)\(capabilities, 'textDocument'\), 'inlineCompletion'\)/);
  assert.match(feature, /InlineCompletionRequest\.type/);
  assert.match(feature, /middleware\.provideInlineCompletionItems/);
  assert.match(feature, /registerInlineCompletionItemProvider/);
  const modules = path.join(LIB, '..', '..', '..');
  const file = ['vscode-languageclient/node_modules', '.']
    .map((dir) => path.join(modules, dir, 'vscode-languageserver-protocol', 'lib', 'common', 'protocol.inlineCompletion.js'))
    .find((candidate) => fs.existsSync(candidate));
  assert.ok(file, 'vscode-languageserver-protocol has protocol.inlineCompletion.js');
  assert.match(fs.readFileSync(file, 'utf8'), /InlineCompletionRequest\.method = 'textDocument\/inlineCompletion'/);
});
