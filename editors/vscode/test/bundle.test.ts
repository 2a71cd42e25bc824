/**
 * The bundle that goes into the .vsix (dist/extension.js, built by `npm run build`) loads with
 * only `vscode` provided from outside and exports activate/deactivate.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as path from 'node:path';
import { test } from 'node:test';

const BUNDLE = path.join(__dirname, '..', '..', 'dist', 'extension.js');

/** Anything: a function, a class to extend, an object with any property, all at once. */
function anything(): unknown {
  const cache = new Map<PropertyKey, unknown>();
  const target = function () {} as unknown as object;
  return new Proxy(target, {
    get(_target, property) {
      if (property === 'prototype') {
        return {};
      }
      if (property === Symbol.toPrimitive) {
        return () => 1;
      }
      if (!cache.has(property)) {
        cache.set(property, anything());
      }
      return cache.get(property);
    },
    apply: () => anything(),
    construct: () => ({}),
  });
}

/** The `vscode` module: every name @types/vscode exports, each one `anything()`. */
function vscodeModule(): object {
  const types = fs.readFileSync(require.resolve('@types/vscode/index.d.ts'), 'utf8');
  const names = new Set([...types.matchAll(/^\s*export (?:class|enum|namespace|const|function|let) (\w+)/gm)].map((m) => m[1]));
  const module: Record<string, unknown> = {};
  for (const name of names) {
    module[name] = anything();
  }
  return module;
}

test('dist/extension.js loads with nothing but `vscode` from outside', { skip: !fs.existsSync(BUNDLE) && 'run `npm run build` first' }, () => {
  const api = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
  const original = api._load;
  const outside: string[] = [];
  api._load = function (request, parent, isMain) {
    if (request === 'vscode') {
      return vscodeModule();
    }
    if (!Module.isBuiltin(request) && request !== BUNDLE) {
      outside.push(request);
    }
    return original.call(this, request, parent, isMain);
  };
  try {
    delete require.cache[BUNDLE];
    const bundle = require(BUNDLE) as Record<string, unknown>;
    assert.equal(typeof bundle.activate, 'function');
    assert.equal(typeof bundle.deactivate, 'function');
    assert.deepEqual(outside, [], 'everything else is bundled');
  } finally {
    api._load = original;
  }
});
