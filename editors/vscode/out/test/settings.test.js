"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
const strict_1 = __importDefault(require("node:assert/strict"));
const node_test_1 = require("node:test");
const settings_1 = require("../src/settings");
/** A reader over a flat `{ "model.nCtx": 8192 }` map: listed keys are "set", others not. */
function reader(values) {
    return (key) => {
        if (key in values) {
            return { value: values[key], isSet: true };
        }
        const spec = settings_1.SERVER_SETTINGS.find((s) => s.key === key);
        return { value: spec?.default, isSet: false };
    };
}
(0, node_test_1.describe)('buildServerSettings', () => {
    (0, node_test_1.test)('nothing set: an empty object, so every default is the server\'s own', () => {
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({})), {});
    });
    (0, node_test_1.test)('flat dotted keys become the nested camelCase object', () => {
        const settings = (0, settings_1.buildServerSettings)(reader({
            'model.nCtx': 8192,
            'model.nThreads': 4,
            'model.fimTemplate': 'starcoder',
            'completion.maxLines': 4,
            'completion.contextTokens': 1024,
            'completion.enabled': false,
            logLevel: 'debug',
        }));
        strict_1.default.deepEqual(settings, {
            model: { nCtx: 8192, nThreads: 4, fimTemplate: 'starcoder' },
            completion: { maxLines: 4, contextTokens: 1024, enabled: false },
            logLevel: 'debug',
        });
    });
    (0, node_test_1.test)('the README example round-trips', () => {
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({ 'model.nThreads': 4, 'completion.maxLines': 4, 'completion.contextTokens': 1024 })), {
            model: { nThreads: 4 },
            completion: { maxLines: 4, contextTokens: 1024 },
        });
    });
    (0, node_test_1.test)('VS Code\'s spellings of null become null: "" for paths, 0 for threads', () => {
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({ 'model.path': '', 'model.sha256': '  ', 'model.nThreads': 0 })), {
            model: { path: null, sha256: null, nThreads: null },
        });
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({ 'model.path': null, 'model.nThreads': null })), {
            model: { path: null, nThreads: null },
        });
    });
    (0, node_test_1.test)('real values pass unchanged (paths are not trimmed or rewritten)', () => {
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({ 'model.path': '/models/x y.gguf', 'model.sha256': 'ab'.repeat(32) })), {
            model: { path: '/models/x y.gguf', sha256: 'ab'.repeat(32) },
        });
    });
    (0, node_test_1.test)('out-of-range and wrongly typed values go to the server, which validates and warns once', () => {
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({ 'model.nCtx': 10, 'completion.maxTokens': '64', 'model.fimTemplate': 'nope' })), {
            model: { nCtx: 10, fimTemplate: 'nope' },
            completion: { maxTokens: '64' },
        });
    });
    (0, node_test_1.test)('settings that are not server settings (lspInfer.server.*) are never sent', () => {
        const settings = (0, settings_1.buildServerSettings)(reader({ 'server.command': ['x'], 'server.pythonPath': '/p' }));
        strict_1.default.deepEqual(settings, {});
    });
    (0, node_test_1.test)('the API key from SecretStorage is injected as team.apiKey', () => {
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({ 'team.url': 'http://h:8000/v1', 'team.model': 'qwen' }), ' sk-123456 '), {
            team: { url: 'http://h:8000/v1', model: 'qwen', apiKey: 'sk-123456' },
        });
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({}), 'sk-123456'), { team: { apiKey: 'sk-123456' } });
    });
    (0, node_test_1.test)('no API key, or an empty one: no team.apiKey and no team object', () => {
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({}), undefined), {});
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({}), ''), {});
        strict_1.default.deepEqual((0, settings_1.buildServerSettings)(reader({ 'team.url': 'http://h/v1' }), '   '), { team: { url: 'http://h/v1' } });
    });
    (0, node_test_1.test)('every server setting maps to its dotted path', () => {
        const all = {};
        for (const spec of settings_1.SERVER_SETTINGS) {
            all[spec.key] = spec.type === 'boolean' ? false : spec.type === 'integer' ? 7 : 'v';
        }
        const settings = (0, settings_1.buildServerSettings)(reader(all));
        for (const spec of settings_1.SERVER_SETTINGS) {
            let node = settings;
            for (const part of spec.key.split('.')) {
                node = node[part];
            }
            strict_1.default.equal(node, all[spec.key], spec.key);
        }
    });
});
(0, node_test_1.describe)('toServerValue', () => {
    const path = settings_1.SERVER_SETTINGS.find((s) => s.key === 'model.path');
    const threads = settings_1.SERVER_SETTINGS.find((s) => s.key === 'model.nThreads');
    const ctx = settings_1.SERVER_SETTINGS.find((s) => s.key === 'model.nCtx');
    (0, node_test_1.test)('null handling per setting', () => {
        strict_1.default.equal((0, settings_1.toServerValue)(path, ''), null);
        strict_1.default.equal((0, settings_1.toServerValue)(path, undefined), null);
        strict_1.default.equal((0, settings_1.toServerValue)(path, 'a.gguf'), 'a.gguf');
        strict_1.default.equal((0, settings_1.toServerValue)(threads, 0), null);
        strict_1.default.equal((0, settings_1.toServerValue)(threads, 2), 2);
        strict_1.default.equal((0, settings_1.toServerValue)(ctx, 0), 0, '0 is only null where the setting says so');
    });
});
(0, node_test_1.describe)('settings table', () => {
    (0, node_test_1.test)('enums, defaults and bounds match the server (README configuration table)', () => {
        const byKey = new Map(settings_1.SERVER_SETTINGS.map((s) => [s.key, s]));
        const expect = (key, fields) => {
            const spec = byKey.get(key);
            strict_1.default.ok(spec, key);
            for (const [field, value] of Object.entries(fields)) {
                strict_1.default.deepEqual(spec[field], value, `${key}.${field}`);
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
        expect('completion.timeoutMs', { default: 4000, minimum: 100, maximum: 120000 });
        expect('logLevel', { default: 'info', enum: ['error', 'warning', 'info', 'debug'] });
        expect('model.path', { default: '', nullAs: 'emptyString' });
        expect('model.sha256', { default: '', nullAs: 'emptyString' });
        strict_1.default.ok(!byKey.has('team.apiKey'), 'the API key is a secret, not a setting');
    });
    (0, node_test_1.test)('defaults satisfy their own enum and bounds', () => {
        for (const spec of settings_1.SERVER_SETTINGS) {
            if (spec.enum) {
                strict_1.default.ok(spec.enum.includes(spec.default), spec.key);
            }
            if (typeof spec.default === 'number') {
                strict_1.default.ok(spec.minimum === undefined || spec.default >= spec.minimum, spec.key);
                strict_1.default.ok(spec.maximum === undefined || spec.default <= spec.maximum, spec.key);
            }
        }
    });
});
(0, node_test_1.describe)('configurationSectionValue', () => {
    const settings = { model: { nCtx: 8192 }, completion: { maxLines: 4 } };
    (0, node_test_1.test)('lspInfer is the whole object; sub-sections are parts; other sections are not ours', () => {
        strict_1.default.deepEqual((0, settings_1.configurationSectionValue)(settings, 'lspInfer'), settings);
        strict_1.default.deepEqual((0, settings_1.configurationSectionValue)(settings, 'lspInfer.model'), { nCtx: 8192 });
        strict_1.default.equal((0, settings_1.configurationSectionValue)(settings, 'lspInfer.completion.maxLines'), 4);
        strict_1.default.equal((0, settings_1.configurationSectionValue)(settings, 'lspInfer.team'), null);
        strict_1.default.equal((0, settings_1.configurationSectionValue)(settings, 'editor'), undefined);
        strict_1.default.equal((0, settings_1.configurationSectionValue)(settings, 'lspInferX'), undefined);
        strict_1.default.equal((0, settings_1.configurationSectionValue)(settings, undefined), undefined);
    });
});
(0, node_test_1.describe)('secrets stay out of logs', () => {
    const key = 'sk-live-0123456789abcdef';
    const settings = (0, settings_1.buildServerSettings)(reader({ 'team.url': 'http://h/v1', 'completion.maxTokens': 32 }), key);
    (0, node_test_1.test)('redactSettings masks the API key and nothing else', () => {
        const redacted = (0, settings_1.redactSettings)(settings);
        strict_1.default.deepEqual(redacted, { team: { url: 'http://h/v1', apiKey: settings_1.REDACTED }, completion: { maxTokens: 32 } });
        strict_1.default.ok(!JSON.stringify(redacted).includes(key));
        strict_1.default.equal(settings.team && settings.team.apiKey, key, 'the original is not modified');
    });
    (0, node_test_1.test)('maxTokens and contextTokens are not mistaken for secrets', () => {
        strict_1.default.deepEqual((0, settings_1.redactSettings)({ completion: { maxTokens: 1, contextTokens: 2 } }), { completion: { maxTokens: 1, contextTokens: 2 } });
    });
    (0, node_test_1.test)('redactText replaces the key, raw and JSON-escaped', () => {
        const line = `initialize {"initializationOptions":${JSON.stringify(settings)}}`;
        strict_1.default.ok(line.includes(key));
        const clean = (0, settings_1.redactText)(line, [key]);
        strict_1.default.ok(!clean.includes(key));
        strict_1.default.ok(clean.includes(settings_1.REDACTED));
        const odd = 'pa"ss\\word';
        strict_1.default.ok(!(0, settings_1.redactText)(JSON.stringify({ apiKey: odd }), [odd]).includes('ss\\\\word'));
        strict_1.default.equal((0, settings_1.redactText)('short abc', ['abc']), 'short abc', 'very short secrets are ignored');
        strict_1.default.equal((0, settings_1.redactText)('nothing', [undefined]), 'nothing');
    });
});
(0, node_test_1.describe)('changeImpact', () => {
    const affects = (...changed) => (section) => changed.some((key) => key === section || key.startsWith(section + '.') || section.startsWith(key + '.'));
    (0, node_test_1.test)('server settings notify; lspInfer.server.* restarts; other sections do nothing', () => {
        strict_1.default.deepEqual((0, settings_1.changeImpact)(affects('lspInfer.completion.maxLines')), { restart: false, notify: true, enabled: false });
        strict_1.default.deepEqual((0, settings_1.changeImpact)(affects('lspInfer.completion.enabled')), { restart: false, notify: true, enabled: true });
        strict_1.default.deepEqual((0, settings_1.changeImpact)(affects('lspInfer.server.command')), { restart: true, notify: false, enabled: false });
        strict_1.default.deepEqual((0, settings_1.changeImpact)(affects('lspInfer.server.pythonPath', 'lspInfer.model.nCtx')), { restart: true, notify: false, enabled: false });
        strict_1.default.deepEqual((0, settings_1.changeImpact)(affects('editor.fontSize')), { restart: false, notify: false, enabled: false });
        strict_1.default.deepEqual((0, settings_1.changeImpact)(affects('lspInfer.trace.server')), { restart: false, notify: false, enabled: false });
    });
});
//# sourceMappingURL=settings.test.js.map