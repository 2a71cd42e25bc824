import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  buildServerSettings,
  changeImpact,
  configurationSectionValue,
  REDACTED,
  redactSettings,
  redactText,
  SERVER_SETTINGS,
  type SettingRead,
  toServerValue,
} from '../src/settings';

/** A reader over a flat `{ "model.nCtx": 8192 }` map: listed keys are "set", others not. */
function reader(values: Record<string, unknown>): (key: string) => SettingRead {
  return (key) => {
    if (key in values) {
      return { value: values[key], isSet: true };
    }
    const spec = SERVER_SETTINGS.find((s) => s.key === key);
    return { value: spec?.default, isSet: false };
  };
}

describe('buildServerSettings', () => {
  test('nothing set: an empty object, so every default is the server\'s own', () => {
    assert.deepEqual(buildServerSettings(reader({})), {});
  });

  test('flat dotted keys become the nested camelCase object', () => {
    const settings = buildServerSettings(
      reader({
        'model.nCtx': 8192,
        'model.nThreads': 4,
        'model.fimTemplate': 'starcoder',
        'completion.maxLines': 4,
        'completion.contextTokens': 1024,
        'completion.enabled': false,
        logLevel: 'debug',
      }),
    );
    assert.deepEqual(settings, {
      model: { nCtx: 8192, nThreads: 4, fimTemplate: 'starcoder' },
      completion: { maxLines: 4, contextTokens: 1024, enabled: false },
      logLevel: 'debug',
    });
  });

  test('the docs/settings.md example round-trips', () => {
    assert.deepEqual(buildServerSettings(reader({ 'model.nThreads': 4, 'completion.maxLines': 4, 'completion.contextTokens': 1024 })), {
      model: { nThreads: 4 },
      completion: { maxLines: 4, contextTokens: 1024 },
    });
  });

  test('VS Code\'s spellings of null become null: "" for paths, 0 for threads', () => {
    assert.deepEqual(buildServerSettings(reader({ 'model.path': '', 'model.sha256': '  ', 'model.nThreads': 0 })), {
      model: { path: null, sha256: null, nThreads: null },
    });
    assert.deepEqual(buildServerSettings(reader({ 'model.path': null, 'model.nThreads': null })), {
      model: { path: null, nThreads: null },
    });
  });

  test('real values pass unchanged (paths are not trimmed or rewritten)', () => {
    assert.deepEqual(buildServerSettings(reader({ 'model.path': '/models/x y.gguf', 'model.sha256': 'ab'.repeat(32) })), {
      model: { path: '/models/x y.gguf', sha256: 'ab'.repeat(32) },
    });
  });

  test('out-of-range and wrongly typed values go to the server, which validates and warns once', () => {
    assert.deepEqual(buildServerSettings(reader({ 'model.nCtx': 10, 'completion.maxTokens': '64', 'model.fimTemplate': 'nope' })), {
      model: { nCtx: 10, fimTemplate: 'nope' },
      completion: { maxTokens: '64' },
    });
  });

  test('settings that are not server settings (lspInfer.server.*) are never sent', () => {
    const settings = buildServerSettings(reader({ 'server.command': ['x'], 'server.pythonPath': '/p' }));
    assert.deepEqual(settings, {});
  });

  test('the API key from SecretStorage is injected as team.apiKey', () => {
    assert.deepEqual(buildServerSettings(reader({ 'team.url': 'http://h:8000/v1', 'team.model': 'qwen' }), ' sk-123456 '), {
      team: { url: 'http://h:8000/v1', model: 'qwen', apiKey: 'sk-123456' },
    });
    assert.deepEqual(buildServerSettings(reader({}), 'sk-123456'), { team: { apiKey: 'sk-123456' } });
  });

  test('team settings: "" for url and model is null; the rest pass unchanged', () => {
    assert.deepEqual(buildServerSettings(reader({ 'team.url': '', 'team.model': ' ' })), { team: { url: null, model: null } });
    assert.deepEqual(
      buildServerSettings(
        reader({
          'team.api': 'completions',
          'team.timeoutMs': 600000,
          'team.verifyTls': false,
          'team.completions': true,
          'team.fimTemplate': 'starcoder',
          'team.batchWindowMs': 0,
          'team.retries': 0,
        }),
      ),
      { team: { api: 'completions', timeoutMs: 600000, verifyTls: false, completions: true, fimTemplate: 'starcoder', batchWindowMs: 0, retries: 0 } },
    );
  });

  test('exclude is a list of patterns, sent as is; debug and suffixTokens are plain values', () => {
    assert.deepEqual(buildServerSettings(reader({ exclude: ['*.pem', 'secrets/**'], debug: true, 'completion.suffixTokens': 0 })), {
      exclude: ['*.pem', 'secrets/**'],
      debug: true,
      completion: { suffixTokens: 0 },
    });
    assert.deepEqual(buildServerSettings(reader({ exclude: [] })), { exclude: [] });
  });

  test('minConfidence is a fraction, sent as is (0 is a threshold, not null)', () => {
    assert.deepEqual(buildServerSettings(reader({ 'completion.minConfidence': 0.25 })), { completion: { minConfidence: 0.25 } });
    assert.deepEqual(buildServerSettings(reader({ 'completion.minConfidence': 0 })), { completion: { minConfidence: 0 } });
  });

  test('no API key, or an empty one: no team.apiKey and no team object', () => {
    assert.deepEqual(buildServerSettings(reader({}), undefined), {});
    assert.deepEqual(buildServerSettings(reader({}), ''), {});
    assert.deepEqual(buildServerSettings(reader({ 'team.url': 'http://h/v1' }), '   '), { team: { url: 'http://h/v1' } });
  });

  test('every server setting maps to its dotted path', () => {
    const all: Record<string, unknown> = {};
    for (const spec of SERVER_SETTINGS) {
      all[spec.key] = spec.type === 'boolean' ? false : spec.type === 'integer' ? 7 : spec.type === 'number' ? 0.25 : spec.type === 'array' ? ['v'] : 'v';
    }
    const settings = buildServerSettings(reader(all));
    for (const spec of SERVER_SETTINGS) {
      let node: unknown = settings;
      for (const part of spec.key.split('.')) {
        node = (node as Record<string, unknown>)[part];
      }
      assert.deepEqual(node, all[spec.key], spec.key);
    }
  });
});

describe('toServerValue', () => {
  const path = SERVER_SETTINGS.find((s) => s.key === 'model.path')!;
  const threads = SERVER_SETTINGS.find((s) => s.key === 'model.nThreads')!;
  const ctx = SERVER_SETTINGS.find((s) => s.key === 'model.nCtx')!;
  test('null handling per setting', () => {
    assert.equal(toServerValue(path, ''), null);
    assert.equal(toServerValue(path, undefined), null);
    assert.equal(toServerValue(path, 'a.gguf'), 'a.gguf');
    assert.equal(toServerValue(threads, 0), null);
    assert.equal(toServerValue(threads, 2), 2);
    assert.equal(toServerValue(ctx, 0), 0, '0 is only null where the setting says so');
  });
});

describe('settings table', () => {
  test('enums, defaults and bounds match the server (docs/settings.md)', () => {
    const byKey = new Map(SERVER_SETTINGS.map((s) => [s.key, s]));
    const expect = (key: string, fields: Record<string, unknown>) => {
      const spec = byKey.get(key);
      assert.ok(spec, key);
      for (const [field, value] of Object.entries(fields)) {
        assert.deepEqual((spec as unknown as Record<string, unknown>)[field], value, `${key}.${field}`);
      }
    };
    expect('model.nCtx', { default: 4096, minimum: 512, maximum: 131072 });
    expect('model.nThreads', { default: 0, minimum: 0, maximum: 256, nullAs: 'zero' });
    expect('model.nBatch', { default: 256, minimum: 16, maximum: 4096 });
    expect('model.fimTemplate', { default: 'auto', enum: ['auto', 'qwen', 'starcoder', 'codellama', 'deepseek', 'codestral', 'codegemma'] });
    expect('completion.enabled', { default: true, type: 'boolean' });
    expect('completion.maxTokens', { default: 64, minimum: 1, maximum: 1024 });
    expect('completion.maxLines', { default: 8, minimum: 1, maximum: 200 });
    expect('completion.contextTokens', { default: 512, minimum: 64, maximum: 32768 });
    expect('completion.timeoutMs', { default: 1000, minimum: 100, maximum: 120000 });
    expect('logLevel', { default: 'info', enum: ['error', 'warning', 'info', 'debug'] });
    expect('model.path', { default: '', nullAs: 'emptyString' });
    expect('model.sha256', { default: '', nullAs: 'emptyString' });
    expect('model.fimOrder', { default: 'auto', enum: ['auto', 'psm', 'spm', 'spmv'] });
    expect('completion.suffixTokens', { default: 128, minimum: 0, maximum: 16384 });
    expect('completion.precompute', { default: true, type: 'boolean' });
    expect('completion.warm', { default: true, type: 'boolean' });
    // Its default is checked against package.json (manifest.test.ts), and that against the server.
    expect('completion.minConfidence', { type: 'number', minimum: 0, maximum: 1 });
    expect('completion.coldStartConfidence', { type: 'number', minimum: 0, maximum: 1 });
    expect('team.url', { default: '', nullAs: 'emptyString' });
    expect('team.model', { default: '', nullAs: 'emptyString' });
    expect('team.api', { default: 'chat', enum: ['chat', 'completions'] });
    expect('team.timeoutMs', { default: 300000, minimum: 1000, maximum: 3600000 });
    expect('team.connectTimeoutMs', { default: 5000, minimum: 100, maximum: 60000 });
    expect('team.maxTokens', { default: 8192, minimum: 16, maximum: 131072 });
    expect('team.maxConcurrency', { default: 4, minimum: 1, maximum: 64 });
    expect('team.batchWindowMs', { default: 100, minimum: 0, maximum: 10000 });
    expect('team.retries', { default: 2, minimum: 0, maximum: 10 });
    expect('team.priority', { default: false, type: 'boolean' });
    expect('team.verifyTls', { default: true, type: 'boolean' });
    expect('team.completions', { default: false, type: 'boolean' });
    expect('team.completionTimeoutMs', { default: 3000, minimum: 100, maximum: 60000 });
    expect('team.fimTemplate', { default: 'qwen', enum: ['qwen', 'starcoder', 'codellama', 'deepseek', 'codestral', 'codegemma'] });
    expect('exclude', { default: [], type: 'array' });
    expect('debug', { default: false, type: 'boolean' });
    assert.ok(!byKey.has('team.apiKey'), 'the API key is a secret, not a setting');
    assert.equal(byKey.size, SERVER_SETTINGS.length, 'no key twice');
  });

  test('defaults satisfy their own enum and bounds', () => {
    for (const spec of SERVER_SETTINGS) {
      if (spec.enum) {
        assert.ok(spec.enum.includes(spec.default as string), spec.key);
      }
      if (typeof spec.default === 'number') {
        assert.ok(spec.minimum === undefined || spec.default >= spec.minimum, spec.key);
        assert.ok(spec.maximum === undefined || spec.default <= spec.maximum, spec.key);
      }
    }
  });
});

describe('configurationSectionValue', () => {
  const settings = { model: { nCtx: 8192 }, completion: { maxLines: 4 } };
  test('lspInfer is the whole object; sub-sections are parts; other sections are not ours', () => {
    assert.deepEqual(configurationSectionValue(settings, 'lspInfer'), settings);
    assert.deepEqual(configurationSectionValue(settings, 'lspInfer.model'), { nCtx: 8192 });
    assert.equal(configurationSectionValue(settings, 'lspInfer.completion.maxLines'), 4);
    assert.equal(configurationSectionValue(settings, 'lspInfer.team'), null);
    assert.equal(configurationSectionValue(settings, 'editor'), undefined);
    assert.equal(configurationSectionValue(settings, 'lspInferX'), undefined);
    assert.equal(configurationSectionValue(settings, undefined), undefined);
  });
});

describe('secrets stay out of logs', () => {
  const key = 'sk-live-0123456789abcdef';
  const settings = buildServerSettings(reader({ 'team.url': 'http://h/v1', 'completion.maxTokens': 32 }), key);

  test('redactSettings masks the API key and nothing else', () => {
    const redacted = redactSettings(settings);
    assert.deepEqual(redacted, { team: { url: 'http://h/v1', apiKey: REDACTED }, completion: { maxTokens: 32 } });
    assert.ok(!JSON.stringify(redacted).includes(key));
    assert.equal(settings.team && (settings.team as Record<string, unknown>).apiKey, key, 'the original is not modified');
  });

  test('maxTokens and contextTokens are not mistaken for secrets', () => {
    assert.deepEqual(redactSettings({ completion: { maxTokens: 1, contextTokens: 2 } }), { completion: { maxTokens: 1, contextTokens: 2 } });
  });

  test('redactText replaces the key, raw and JSON-escaped', () => {
    const line = `initialize {"initializationOptions":${JSON.stringify(settings)}}`;
    assert.ok(line.includes(key));
    const clean = redactText(line, [key]);
    assert.ok(!clean.includes(key));
    assert.ok(clean.includes(REDACTED));
    const odd = 'pa"ss\\word';
    assert.ok(!redactText(JSON.stringify({ apiKey: odd }), [odd]).includes('ss\\\\word'));
    assert.equal(redactText('short abc', ['abc']), 'short abc', 'very short secrets are ignored');
    assert.equal(redactText('nothing', [undefined]), 'nothing');
  });
});

describe('changeImpact', () => {
  const affects = (...changed: string[]) => (section: string) =>
    changed.some((key) => key === section || key.startsWith(section + '.') || section.startsWith(key + '.'));
  test('server settings notify; lspInfer.server.* restarts; other sections do nothing', () => {
    assert.deepEqual(changeImpact(affects('lspInfer.completion.maxLines')), { restart: false, notify: true, enabled: false });
    assert.deepEqual(changeImpact(affects('lspInfer.completion.enabled')), { restart: false, notify: true, enabled: true });
    assert.deepEqual(changeImpact(affects('lspInfer.server.command')), { restart: true, notify: false, enabled: false });
    assert.deepEqual(changeImpact(affects('lspInfer.server.pythonPath', 'lspInfer.model.nCtx')), { restart: true, notify: false, enabled: false });
    assert.deepEqual(changeImpact(affects('editor.fontSize')), { restart: false, notify: false, enabled: false });
    assert.deepEqual(changeImpact(affects('lspInfer.trace.server')), { restart: false, notify: false, enabled: false });
  });
});
