/**
 * `lspInfer/suggestionReady` (docs/protocol.md): after a cold start (a file the model has not
 * seen), the server answers typing from a smaller window, and most often hides that answer (the
 * model is unsure). It evaluates the whole window in the background, and when that suggestion
 * is ready (and typing would be shown it), it tells the editor where; the extension asks again
 * there if the user is still there, so the suggestion appears without another keystroke. The
 * same comes after a pause when the suggestion with newly picked extra context is another one.
 *
 * VS Code's way to ask again is `editor.action.inlineSuggest.trigger`, whose request is an
 * Invoked one. The server takes Invoked for the user's key (the team server, several choices, no
 * confidence threshold), so the extension remembers the re-ask and sends that request as
 * Automatic: the server then answers at once from its cache, held to `completion.minConfidence`.
 * (VS Code 1.139's trigger also takes `{explicit: false}`; tried in the e2e, it asked nothing:
 * an automatic request where typing's was answered is not sent again.)
 *
 * Pure: no `vscode` import. The extension hands in where the editor is and a timer.
 */
import type { LspPosition } from './definitions';

export const SUGGESTION_READY_METHOD = 'lspInfer/suggestionReady';
/** VS Code's command that asks the inline completion providers again (as Invoke). */
export const TRIGGER_INLINE_SUGGEST = 'editor.action.inlineSuggest.trigger';
/**
 * The trigger's request comes within milliseconds; past this a remembered re-ask is dropped,
 * so that the user's own Alt+] later at the same place is Invoked as always.
 */
export const RE_ASK_WINDOW_MS = 2000;

/** A place in a document at a version: where the server's suggestion is ready. */
export interface Place {
  readonly uri: string;
  readonly version: number;
  readonly position: LspPosition;
}

/** A selection as VS Code's: where it started and where the cursor is. */
export interface SelectionLike {
  readonly anchor: LspPosition;
  readonly active: LspPosition;
}

/** The active editor as far as a re-ask is concerned. */
export interface EditorView {
  readonly uri: string;
  readonly version: number;
  readonly selections: readonly SelectionLike[];
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** The notification's place, or undefined for malformed params (which are ignored). */
export function parseSuggestionReady(params: unknown): Place | undefined {
  if (!isObject(params) || !isObject(params.textDocument) || !isObject(params.position)) {
    return undefined;
  }
  const { uri, version } = params.textDocument;
  const { line, character } = params.position;
  if (typeof uri !== 'string' || !Number.isInteger(version) || !isCount(line) || !isCount(character)) {
    return undefined;
  }
  return { uri, version: version as number, position: { line, character } };
}

/**
 * Announces the notification in the initialize capabilities:
 * `experimental.lspInfer.suggestionReady = true`, beside whatever else is there.
 */
export function announceSuggestionReady(capabilities: { experimental?: unknown }): void {
  const experimental = isObject(capabilities.experimental) ? capabilities.experimental : {};
  const ours = isObject(experimental.lspInfer) ? experimental.lspInfer : {};
  capabilities.experimental = { ...experimental, lspInfer: { ...ours, suggestionReady: true } };
}

function samePosition(a: LspPosition, b: LspPosition): boolean {
  return a.line === b.line && a.character === b.character;
}

function samePlace(a: Place, b: Place): boolean {
  return a.uri === b.uri && a.version === b.version && samePosition(a.position, b.position);
}

/**
 * Whether the user is still where the suggestion is ready: that document in the active editor,
 * not edited since, and one empty cursor at that position (a selection, more cursors or a moved
 * cursor mean the user moved on).
 */
export function cursorRestsAt(ready: Place, editor: EditorView | undefined): boolean {
  if (editor === undefined || editor.uri !== ready.uri || editor.version !== ready.version || editor.selections.length !== 1) {
    return false;
  }
  const [selection] = editor.selections;
  return samePosition(selection.anchor, selection.active) && samePosition(selection.active, ready.position);
}

/**
 * The re-ask the extension triggered and waits for, so that its request goes to the server as
 * Automatic. One at a time; taken by the next inline completion request, dropped after
 * RE_ASK_WINDOW_MS.
 */
export class PendingReAsk {
  private pending: Place | undefined;
  private cancelExpiry: (() => void) | undefined;

  constructor(private readonly schedule: (run: () => void, ms: number) => () => void) {}

  /** The extension is about to trigger inline suggestions at `place`. */
  expect(place: Place): void {
    this.clear();
    this.pending = place;
    this.cancelExpiry = this.schedule(() => {
      this.pending = undefined;
      this.cancelExpiry = undefined;
    }, RE_ASK_WINDOW_MS);
  }

  /**
   * Whether the inline completion request at `place` is the re-ask: the first request after
   * the trigger, at the remembered place. Either way the re-ask is taken: the next request is
   * the trigger's, and one elsewhere (or at another version) means the user moved on.
   */
  take(place: Place): boolean {
    const pending = this.pending;
    this.clear();
    return pending !== undefined && samePlace(pending, place);
  }

  /** Forget it (the server restarted, the extension stops). */
  clear(): void {
    this.cancelExpiry?.();
    this.cancelExpiry = undefined;
    this.pending = undefined;
  }
}
