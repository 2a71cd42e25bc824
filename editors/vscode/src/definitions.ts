/**
 * `lspInfer/definitions` (docs/protocol.md): the server asks where names near the cursor are
 * defined, and the extension answers from the language servers VS Code already runs
 * (`vscode.executeDefinitionProvider`), with the text of each definition.
 *
 * Pure: no `vscode` import. The extension hands in how to find a definition and how to read a
 * document; what is taken from the answer, how the text is cut, and the time bound live here.
 */

export const DEFINITIONS_METHOD = 'lspInfer/definitions';
/** A definition's text: at most this many lines from the start of its range's first line … */
export const MAX_LINES = 60;
/** … and at most this many characters (UTF-16 code units; a surrogate pair is never split). */
export const MAX_CHARS = 8000;
/** Lines sent from above the definition's line: a doc comment or decorators live there. */
export const ABOVE_LINES = 10;
/**
 * A definition on a file's first line is most often the file itself (a module imported whole):
 * it is sent up to these, so that the server's outline of it reaches its last definitions.
 */
export const MODULE_MAX_LINES = 5000;
export const MODULE_MAX_CHARS = 200000;

/** The lines and characters sent of a definition starting on `line` (0-based). */
export function textBounds(line: number): [number, number] {
  return line === 0 ? [MODULE_MAX_LINES, MODULE_MAX_CHARS] : [MAX_LINES, MAX_CHARS];
}
/** The server sends at most 8 positions; more than this get null without being looked up. */
export const MAX_POSITIONS = 32;
/**
 * The whole answer is sent after at most this long (or `context.definitionsMs`, if longer),
 * with null for the positions still being looked up. The server stops waiting after its own
 * budget (100 ms by default) and keeps a later answer for its next pick, so waiting longer
 * than that is still useful; never answering is not.
 */
export const ANSWER_BUDGET_MS = 1000;
/** A target file larger than this is not read (its definition is null). */
export const MAX_FILE_BYTES = 16 * 1024 * 1024;

export interface LspPosition {
  readonly line: number;
  readonly character: number;
}

export interface LspRange {
  readonly start: LspPosition;
  readonly end: LspPosition;
}

export interface Definition {
  readonly uri: string;
  readonly range: LspRange;
  readonly text: string;
  /** The lines just above the definition (its doc comment, decorators): at most ABOVE_LINES. */
  readonly above?: string;
}

export interface DefinitionsResult {
  readonly definitions: (Definition | null)[];
}

/** A uri as VS Code's `Uri`: anything whose toString() is the uri. */
export interface UriLike {
  toString(): string;
}

/** Where a definition is: the first location the language servers gave. */
export interface Target<U extends UriLike = UriLike> {
  readonly uri: U;
  readonly range: LspRange;
}

/** A document's lines, read one at a time (an open TextDocument, or a file's text). */
export interface TextLines {
  readonly lineCount: number;
  line(index: number): string;
}

/** What the handler needs from the editor. */
export interface DefinitionsHost<U extends UriLike> {
  /** The definition provider's answer for a position: Location[], LocationLink[], or nothing. */
  find(uri: string, position: LspPosition): PromiseLike<unknown>;
  /** The target document's lines (the editor's copy when it is open, else the file). */
  read(uri: U): PromiseLike<TextLines>;
  /** Runs `run` after `ms` milliseconds; returns a cancel function. */
  schedule(run: () => void, ms: number): () => void;
}

/** The request's cancellation (a vscode / vscode-jsonrpc CancellationToken). */
export interface CancelSignal {
  onCancellationRequested(listener: () => void): { dispose(): unknown };
}

export interface AnswerOptions {
  /** Answer after at most this long, with null for the positions not found by then. */
  readonly budgetMs: number;
  /** Answer at once with what is there when the server cancels the request. */
  readonly token?: CancelSignal;
}

type Json = Record<string, unknown>;

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** An LSP position (non-negative integers), or undefined. */
export function parsePosition(value: unknown): LspPosition | undefined {
  return isObject(value) && isCount(value.line) && isCount(value.character) ? { line: value.line, character: value.character } : undefined;
}

/** An LSP range of two positions, or undefined. */
export function parseRange(value: unknown): LspRange | undefined {
  if (!isObject(value)) {
    return undefined;
  }
  const start = parsePosition(value.start);
  const end = parsePosition(value.end);
  return start !== undefined && end !== undefined ? { start, end } : undefined;
}

function uriLike(value: unknown): value is UriLike {
  return (typeof value === 'object' && value !== null) || typeof value === 'string';
}

/** The request's document and positions (null for a malformed one), or undefined for malformed params. */
export function parseParams(params: unknown): { uri: string; positions: (LspPosition | null)[] } | undefined {
  if (!isObject(params) || !isObject(params.textDocument) || typeof params.textDocument.uri !== 'string' || !Array.isArray(params.positions)) {
    return undefined;
  }
  return { uri: params.textDocument.uri, positions: params.positions.map((p) => parsePosition(p) ?? null) };
}

/**
 * The first location of a definition provider's answer: a Location's uri and range, or a
 * LocationLink's targetUri and targetSelectionRange (its targetRange when it has none).
 */
export function firstTarget<U extends UriLike = UriLike>(result: unknown): Target<U> | undefined {
  const first: unknown = Array.isArray(result) ? result[0] : result;
  if (!isObject(first)) {
    return undefined;
  }
  if ('targetUri' in first) {
    const where = parseRange(first.targetSelectionRange) ?? parseRange(first.targetRange);
    return uriLike(first.targetUri) && where !== undefined ? { uri: first.targetUri as U, range: where } : undefined;
  }
  const where = parseRange(first.range);
  return uriLike(first.uri) && where !== undefined ? { uri: first.uri as U, range: where } : undefined;
}

/**
 * The text of a definition: the lines from `fromLine` on, at most MAX_LINES of them and
 * MAX_CHARS characters (the last line cut there), joined with "\n". Undefined when the
 * document has no such line (it changed since the language server looked).
 */
export function definitionText(lines: TextLines, fromLine: number, maxLines = MAX_LINES, maxChars = MAX_CHARS): string | undefined {
  if (fromLine < 0 || fromLine >= lines.lineCount) {
    return undefined;
  }
  const end = Math.min(lines.lineCount, fromLine + maxLines);
  let text = '';
  for (let i = fromLine; i < end; i++) {
    text += (i === fromLine ? '' : '\n') + lines.line(i);
    if (text.length >= maxChars) {
      break;
    }
  }
  if (text.length > maxChars) {
    text = text.slice(0, maxChars);
    const last = text.charCodeAt(text.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      text = text.slice(0, -1); // half of a surrogate pair
    }
  }
  return text;
}

/** A file's text as lines, split as VS Code splits them (\r\n, \n or \r). */
export function textLines(text: string): TextLines {
  const lines = text.split(/\r\n|\r|\n/);
  return { lineCount: lines.length, line: (index) => lines[index] ?? '' };
}

/**
 * Announces the request in the initialize capabilities:
 * `experimental.lspInfer.definitions = true`, beside whatever else is there.
 */
export function announceDefinitions(capabilities: { experimental?: unknown }): void {
  announceExperimental(capabilities, 'definitions');
}

/** Sets `experimental.lspInfer[name] = true` in the initialize capabilities, beside whatever else is there. */
export function announceExperimental(capabilities: { experimental?: unknown }, name: string): void {
  const experimental = isObject(capabilities.experimental) ? capabilities.experimental : {};
  const ours = isObject(experimental.lspInfer) ? experimental.lspInfer : {};
  capabilities.experimental = { ...experimental, lspInfer: { ...ours, [name]: true } };
}

/** How long the extension waits before it answers with what it has. */
export function answerBudgetMs(definitionsMs: unknown): number {
  return typeof definitionsMs === 'number' && Number.isFinite(definitionsMs) ? Math.max(ANSWER_BUDGET_MS, definitionsMs) : ANSWER_BUDGET_MS;
}

async function lookUp<U extends UriLike>(host: DefinitionsHost<U>, uri: string, at: LspPosition): Promise<Definition | null> {
  const target = firstTarget<U>(await host.find(uri, at));
  if (target === undefined) {
    return null;
  }
  const lines = await host.read(target.uri);
  const line = target.range.start.line;
  const text = definitionText(lines, line, ...textBounds(line));
  if (text === undefined) {
    return null;
  }
  const above = definitionAbove(lines, line);
  return { uri: target.uri.toString(), range: target.range, text, ...(above ? { above } : {}) };
}

/** The ABOVE_LINES lines above `line` (fewer at the top of the file), joined with "\n". */
export function definitionAbove(lines: TextLines, line: number, count = ABOVE_LINES): string {
  const parts: string[] = [];
  for (let i = Math.max(0, line - count); i < line && i < lines.lineCount; i++) {
    parts.push(lines.line(i).slice(0, MAX_CHARS / count));
  }
  return parts.join('\n');
}

/**
 * The answer to one request: one entry per position, in order, null where nothing was found,
 * a lookup failed, or it was not done within the budget. The positions are looked up at once.
 * Never rejects: malformed params get `{"definitions": []}`.
 */
export function answerDefinitions<U extends UriLike>(params: unknown, host: DefinitionsHost<U>, options: AnswerOptions): Promise<DefinitionsResult> {
  const parsed = parseParams(params);
  if (parsed === undefined || parsed.positions.length === 0) {
    return Promise.resolve({ definitions: [] });
  }
  const definitions: (Definition | null)[] = parsed.positions.map(() => null);
  return new Promise<DefinitionsResult>((resolve) => {
    const snapshot = (): DefinitionsResult => ({ definitions: [...definitions] }); // later lookups no longer change it
    const answer = settleOnce(resolve, (run, ms) => host.schedule(run, ms), options.budgetMs, options.token, snapshot, snapshot);
    const lookups = parsed.positions.map(async (at, index) => {
      if (at === null || index >= MAX_POSITIONS) {
        return;
      }
      try {
        definitions[index] = await lookUp(host, parsed.uri, at);
      } catch {
        // This position's answer stays null; the others go on.
      }
    });
    const all = () => answer(snapshot());
    void Promise.all(lookups).then(all, all);
  });
}

/**
 * A promise's `resolve`, called once: with the value given to the returned function, or with
 * `expired()` after `budgetMs`, or with `cancelled()` when the token is cancelled, whichever
 * comes first; the timer and the cancel listener are let go then. Without a timer (`schedule`
 * throws), the caller's work alone decides.
 */
export function settleOnce<T>(
  resolve: (value: T) => void,
  schedule: (run: () => void, ms: number) => () => void,
  budgetMs: number,
  token: CancelSignal | undefined,
  expired: () => T,
  cancelled: () => T,
): (value: T) => void {
  let done = false;
  let cancelTimer = () => {};
  let cancelListener: { dispose(): unknown } | undefined;
  const finish = (value: T) => {
    if (!done) {
      done = true;
      cancelTimer();
      cancelListener?.dispose();
      resolve(value);
    }
  };
  try {
    cancelTimer = schedule(() => finish(expired()), Math.max(0, budgetMs));
    cancelListener = token?.onCancellationRequested(() => finish(cancelled()));
  } catch {
    // No timer: the work alone decides (it ends, answered or failed).
  }
  return finish;
}
