/**
 * `lspInfer/references` (docs/protocol.md): when the cursor rests on a name (`lspInfer/warm`),
 * the server asks where that name is used in the same document, before the user renames it;
 * the extension answers from the language servers VS Code already runs
 * (`vscode.executeReferenceProvider`: declaration included, lsp-infer's own client excluded, as
 * it provides no references). Once the user renames the name at one of those places, the
 * others are the next edit.
 *
 * Pure: no `vscode` import. The extension hands in the open document, how to find references
 * and a timer; the version check, what is kept of the answer, the conversion to the negotiated
 * position encoding and the time bound live here.
 */
import {
  announceExperimental,
  type CancelSignal,
  isObject,
  type LspPosition,
  type LspRange,
  parsePosition,
  parseRange,
  settleOnce,
  type TextLines,
  textLines,
} from './definitions';
import { comparePositions } from './nextEdit';

export const REFERENCES_METHOD = 'lspInfer/references';
/**
 * The answer goes after at most this long (null if the language servers have not answered by
 * then). The server waits at most 5 s for it; 4 s leaves the answer time to reach it. A
 * constant, not a setting: references within one document come back in well under a second
 * from a language server that is not busy indexing, and one that is would not answer in 5 s.
 */
export const REFERENCES_BUDGET_MS = 4000;

/** The position encodings of LSP 3.17 (`PositionEncodingKind`). */
export type PositionEncoding = 'utf-8' | 'utf-16' | 'utf-32';

/**
 * The encoding negotiated at initialize (the server's `capabilities.positionEncoding`): UTF-16
 * when the server names none or one that LSP does not define, as LSP says.
 */
export function positionEncoding(value: unknown): PositionEncoding {
  return value === 'utf-8' || value === 'utf-32' ? value : 'utf-16';
}

/** How many code units of `encoding` the code point takes. */
function unitsOf(codePoint: number, encoding: PositionEncoding): number {
  if (encoding === 'utf-32') {
    return 1;
  }
  if (encoding === 'utf-16') {
    return codePoint > 0xffff ? 2 : 1;
  }
  return codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
}

/**
 * Walks `line` by code points while `more(units in encoding so far, UTF-16 units so far, the
 * code point's size in each)` holds; returns where it stopped, in both. A lone surrogate counts
 * as one code point (three UTF-8 bytes), as a UTF-8 encoder that replaces it would.
 */
function walk(line: string, encoding: PositionEncoding, more: (units: number, utf16: number, size: number, size16: number) => boolean): [number, number] {
  let units = 0;
  let utf16 = 0;
  for (const char of line) {
    const codePoint = char.codePointAt(0) ?? 0;
    const size = unitsOf(codePoint, encoding);
    if (!more(units, utf16, size, char.length)) {
      break;
    }
    units += size;
    utf16 += char.length;
  }
  return [units, utf16];
}

/**
 * `character` (code units of `encoding`) on `line` as a UTF-16 column (VS Code's). Past the end
 * of the line: its end (as LSP says); inside a character: its start.
 */
export function toUtf16(line: string, character: number, encoding: PositionEncoding): number {
  return encoding === 'utf-16' ? character : walk(line, encoding, (units, _utf16, size) => units + size <= character)[1];
}

/** A UTF-16 `column` on `line` as code units of `encoding`; past the end: its end; inside a surrogate pair: its start. */
export function fromUtf16(line: string, column: number, encoding: PositionEncoding): number {
  return encoding === 'utf-16' ? column : walk(line, encoding, (_units, utf16, _size, size16) => utf16 + size16 <= column)[0];
}

export interface ReferencesParams {
  readonly uri: string;
  readonly version: number;
  readonly position: LspPosition;
}

export interface ReferencesResult {
  readonly references: LspRange[];
}

/** Why the answer is what it is (logged; the server only sees the result). */
export type ReferencesOutcome = 'found' | 'none' | 'malformed' | 'not open' | 'stale' | 'failed' | 'timed out' | 'cancelled';

export interface ReferencesAnswer {
  /** What goes to the server: the ranges, or null (never an empty list). */
  readonly result: ReferencesResult | null;
  readonly outcome: ReferencesOutcome;
}

/** What the handler needs of an open document (a vscode.TextDocument is one). */
export interface OpenDocument {
  readonly version: number;
  getText(): string;
}

/** What the handler needs from the editor. */
export interface ReferencesHost {
  /** The open document with this uri (compared as strings), or undefined. */
  document(uri: string): OpenDocument | undefined;
  /** The reference providers' answer at a UTF-16 position of the document: Location[], or nothing. */
  find(uri: string, position: LspPosition): PromiseLike<unknown>;
  /** Runs `run` after `ms` milliseconds; returns a cancel function. */
  schedule(run: () => void, ms: number): () => void;
}

export interface ReferencesOptions {
  /** The position encoding negotiated with the server (its params and the answer are in it). */
  readonly encoding: PositionEncoding;
  /** Answer null after at most this long. */
  readonly budgetMs: number;
  /** Answer null at once when the server cancels the request. */
  readonly token?: CancelSignal;
}

/** The request's document, version and position, or undefined for malformed params. */
export function parseReferencesParams(params: unknown): ReferencesParams | undefined {
  if (!isObject(params) || !isObject(params.textDocument)) {
    return undefined;
  }
  const { uri, version } = params.textDocument;
  const position = parsePosition(params.position);
  if (typeof uri !== 'string' || typeof version !== 'number' || !Number.isInteger(version) || position === undefined) {
    return undefined;
  }
  return { uri, version, position };
}

/**
 * The ranges of a reference provider's answer that are in the document `uri` (its Locations'
 * uris compared as strings; anything else is left out), in `encoding` (a range on a line the
 * document does not have is left out when a conversion needs the line), without duplicates,
 * sorted by start then end.
 */
export function sameDocumentRanges(found: unknown, uri: string, encoding: PositionEncoding, lines?: TextLines): LspRange[] {
  const byKey = new Map<string, LspRange>();
  for (const location of Array.isArray(found) ? found : []) {
    if (!isObject(location) || location.uri === undefined || location.uri === null || String(location.uri) !== uri) {
      continue;
    }
    const range = parseRange(location.range);
    if (range === undefined || comparePositions(range.start, range.end) > 0) {
      continue;
    }
    const converted = convertRange(range, encoding, lines);
    if (converted !== undefined) {
      const { start, end } = converted;
      byKey.set(`${start.line}:${start.character}:${end.line}:${end.character}`, converted);
    }
  }
  return [...byKey.values()].sort((a, b) => comparePositions(a.start, b.start) || comparePositions(a.end, b.end));
}

/** A UTF-16 range in `encoding` (undefined when a line it needs is not in `lines`). */
function convertRange(range: LspRange, encoding: PositionEncoding, lines: TextLines | undefined): LspRange | undefined {
  if (encoding === 'utf-16') {
    return { start: { ...range.start }, end: { ...range.end } };
  }
  if (lines === undefined || range.end.line >= lines.lineCount) {
    return undefined;
  }
  const at = (p: LspPosition) => ({ line: p.line, character: fromUtf16(lines.line(p.line), p.character, encoding) });
  return { start: at(range.start), end: at(range.end) };
}

/**
 * Waits for `pending` at most `budgetMs`, or until the token is cancelled: its value, or how it
 * ended otherwise. Never rejects.
 */
function bounded(
  pending: PromiseLike<unknown>,
  host: Pick<ReferencesHost, 'schedule'>,
  budgetMs: number,
  token: CancelSignal | undefined,
): Promise<{ value: unknown } | { outcome: 'failed' | 'timed out' | 'cancelled' }> {
  return new Promise((resolve) => {
    const end = settleOnce(
      resolve,
      (run, ms) => host.schedule(run, ms),
      budgetMs,
      token,
      () => ({ outcome: 'timed out' }) as const,
      () => ({ outcome: 'cancelled' }) as const,
    );
    Promise.resolve(pending).then(
      (value) => end({ value }),
      () => end({ outcome: 'failed' }),
    );
  });
}

/**
 * The answer to `lspInfer/references`, never an error: null when the params are malformed, the
 * document is not open or not at the requested version when the providers are asked (their
 * ranges would be another text's), the providers fail, take longer than the budget or find
 * nothing in that document, or the server cancels; else the document's reference ranges.
 */
export async function answerReferences(params: unknown, host: ReferencesHost, options: ReferencesOptions): Promise<ReferencesAnswer> {
  const none = (outcome: ReferencesOutcome): ReferencesAnswer => ({ result: null, outcome });
  let lines: TextLines | undefined;
  let asked: ReturnType<typeof bounded>;
  let uri: string;
  try {
    const parsed = parseReferencesParams(params);
    if (parsed === undefined) {
      return none('malformed');
    }
    uri = parsed.uri;
    const document = host.document(uri);
    if (document === undefined) {
      return none('not open');
    }
    // Checked in the same turn as the providers are asked: no edit can come in between.
    if (document.version !== parsed.version) {
      return none('stale');
    }
    let at = parsed.position;
    if (options.encoding !== 'utf-16') {
      // The text at `version`, for converting the position now and the answer's ranges later
      // (the document may be edited while the providers work; their ranges are for `version`).
      lines = textLines(document.getText());
      if (at.line >= lines.lineCount) {
        return none('malformed');
      }
      at = { line: at.line, character: toUtf16(lines.line(at.line), at.character, options.encoding) };
    }
    asked = bounded(host.find(uri, at), host, options.budgetMs, options.token);
  } catch {
    return none('failed'); // the host threw (reading the document, or asking before a promise)
  }
  const ended = await asked;
  if ('outcome' in ended) {
    return none(ended.outcome);
  }
  try {
    const references = sameDocumentRanges(ended.value, uri, options.encoding, lines);
    return references.length === 0 ? none('none') : { result: { references }, outcome: 'found' };
  } catch {
    return none('failed');
  }
}

/**
 * Announces the request in the initialize capabilities:
 * `experimental.lspInfer.references = true`, beside whatever else is there.
 */
export function announceReferences(capabilities: { experimental?: unknown }): void {
  announceExperimental(capabilities, 'references');
}
