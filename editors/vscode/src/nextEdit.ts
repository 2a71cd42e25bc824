/**
 * Next-edit suggestions, VS Code side (`lspInfer/nextEdit`, docs/protocol.md): after the user
 * edits and pauses, the server predicts the edit that comes next somewhere in the document (a
 * parameter renamed on the `def` line: the same rename in the body) as a group of edits at one
 * version. The extension draws it (the removed text struck through, the inserted text as ghost
 * text after it, a hint at the cursor when it is off screen), Tab goes there and Tab again
 * applies the whole group as one edit, Esc dismisses it, and the server is told what became of
 * it (`lspInfer/didShowNextEdit`, `…didAcceptNextEdit`, `…didRejectNextEdit`).
 *
 * VS Code's stable API has no inline-edit rendering (`InlineCompletionItem.isInlineEdit` is a
 * proposed API, refused to published extensions), so it is drawn with text editor decorations
 * and bound to Tab through a context key, as published extensions do.
 *
 * Pure: no `vscode` import. The answer's validation, what is drawn, what Tab does and which
 * notifications go out are decided here; src/extension.ts feeds in what the editor shows and
 * does what this returns.
 */
import type { LspPosition, LspRange } from './definitions';

export const NEXT_EDIT_METHOD = 'lspInfer/nextEdit';
export const DID_SHOW_NEXT_EDIT = 'lspInfer/didShowNextEdit';
export const DID_ACCEPT_NEXT_EDIT = 'lspInfer/didAcceptNextEdit';
export const DID_REJECT_NEXT_EDIT = 'lspInfer/didRejectNextEdit';
/** True while a suggestion is drawn: the `when` of the Tab and Escape keybindings (package.json). */
export const NEXT_EDIT_CONTEXT_KEY = 'lspInfer.nextEditVisible';
/**
 * The pause after the last edit before asking (docs/protocol.md: the plugins ask 300 ms after
 * the last edit, as for lspInfer/warm). A constant, not a setting: a setting of the extension's
 * own would have to be listed as such in the server's settings parity test.
 */
export const NEXT_EDIT_PAUSE_MS = 300;
/** Ghost text longer than this is cut (with an ellipsis): decorations do not wrap. */
export const MAX_GHOST_CHARS = 120;

/** One edit of a group: replace `range` (in the document at the group's version) with `text`. */
export interface TextEdit {
  readonly range: LspRange;
  readonly text: string;
}

/** A suggestion as the server answered it, for the document it was asked for. */
export interface NextEdit {
  readonly uri: string;
  readonly version: number;
  readonly id: string;
  /** What made the prediction (`rename`, …); null from a server that does not say. */
  readonly kind: string | null;
  /** A short text to show beside it (the hint when it is off screen); null when none. */
  readonly label: string | null;
  /** Sorted, never overlapping, never empty. */
  readonly edits: readonly TextEdit[];
}

export interface NextEditParams {
  readonly textDocument: { readonly uri: string; readonly version: number };
  readonly position: LspPosition;
}

export function nextEditParams(uri: string, version: number, position: LspPosition): NextEditParams {
  return { textDocument: { uri, version }, position: { line: position.line, character: position.character } };
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function parsePosition(value: unknown): LspPosition | undefined {
  return isObject(value) && isCount(value.line) && isCount(value.character) ? { line: value.line, character: value.character } : undefined;
}

/** a before b (-1), at the same place (0), after (1). */
export function comparePositions(a: LspPosition, b: LspPosition): number {
  return a.line !== b.line ? Math.sign(a.line - b.line) : Math.sign(a.character - b.character);
}

function parseEdit(value: unknown): TextEdit | undefined {
  if (!isObject(value) || !isObject(value.range) || typeof value.text !== 'string') {
    return undefined;
  }
  const start = parsePosition(value.range.start);
  const end = parsePosition(value.range.end);
  if (start === undefined || end === undefined || comparePositions(start, end) > 0) {
    return undefined;
  }
  return { range: { start, end }, text: value.text };
}

/**
 * The suggestion in an answer to the request for `uri`, or undefined for none: an empty group,
 * and anything malformed (no id, a bad range, edits out of order or overlapping: a group that
 * could not be applied as it is must never be applied in part).
 */
export function parseNextEdit(result: unknown, uri: string): NextEdit | undefined {
  if (!isObject(result) || !Array.isArray(result.edits) || result.edits.length === 0) {
    return undefined;
  }
  const { id, kind, label, version } = result;
  if (typeof id !== 'string' || id === '' || !Number.isInteger(version)) {
    return undefined;
  }
  const edits: TextEdit[] = [];
  for (const raw of result.edits) {
    const edit = parseEdit(raw);
    const previous = edits[edits.length - 1];
    if (edit === undefined || (previous !== undefined && comparePositions(previous.range.end, edit.range.start) > 0)) {
      return undefined;
    }
    edits.push(edit);
  }
  return {
    uri,
    version: version as number,
    id,
    kind: typeof kind === 'string' && kind !== '' ? kind : null,
    label: typeof label === 'string' && label !== '' ? label : null,
    edits,
  };
}

/** A document as the extension sees it now (the active editor's). */
export interface DocumentAt {
  readonly uri: string;
  readonly version: number;
}

/**
 * Whether an answer may be drawn: it is for the version that was asked, and the document is
 * still that one at that version (a keystroke since makes it stale: it would land in the
 * wrong place).
 */
export function fits(suggestion: NextEdit, asked: DocumentAt, now: DocumentAt | undefined): boolean {
  return (
    now !== undefined &&
    suggestion.uri === asked.uri &&
    suggestion.version === asked.version &&
    now.uri === asked.uri &&
    now.version === asked.version
  );
}

// -- drawing ------------------------------------------------------------------------------

/** The editor around the suggestion: where the cursor is, and which lines are on screen. */
export interface EditorLayout {
  readonly cursor: LspPosition;
  /** The visible line ranges, inclusive (VS Code's `visibleRanges`: more than one with folding). */
  readonly visibleLines: readonly { readonly start: number; readonly end: number }[];
}

/** Inserted text drawn after `at` (the end of the text it replaces), in the ghost text color. */
export interface Ghost {
  readonly at: LspPosition;
  readonly text: string;
}

export interface Drawing {
  /** Struck through: the text the edits remove. */
  readonly removed: readonly LspRange[];
  /** The text the edits insert, each after the text it replaces. */
  readonly inserted: readonly Ghost[];
  /** When the first edit is off screen: a note at the end of the cursor's line. */
  readonly hint?: { readonly line: number; readonly text: string };
}

/**
 * Inserted text on one line: a decoration cannot break lines, so a line break shows as ⏎, and
 * a long text is cut (the edit applied is the whole text, whatever is shown).
 */
export function ghostText(text: string): string {
  const oneLine = text.replace(/\r\n|\r|\n/g, '⏎');
  const chars = [...oneLine];
  return chars.length > MAX_GHOST_CHARS ? chars.slice(0, MAX_GHOST_CHARS - 1).join('') + '…' : oneLine;
}

export function isEmptyRange(range: LspRange): boolean {
  return comparePositions(range.start, range.end) === 0;
}

export function lineVisible(line: number, layout: EditorLayout): boolean {
  return layout.visibleLines.some((range) => range.start <= line && line <= range.end);
}

/** "rename wdth → width (1 more) — line 5, Tab to go" (lines 1-based, as the editor shows them). */
export function hintText(suggestion: NextEdit): string {
  const line = suggestion.edits[0].range.start.line + 1;
  return `${suggestion.label ?? 'next edit'} — line ${line}, Tab to go`;
}

/** What to draw for a suggestion in an editor laid out so. */
export function drawing(suggestion: NextEdit, layout: EditorLayout): Drawing {
  const removed = suggestion.edits.filter((edit) => !isEmptyRange(edit.range)).map((edit) => edit.range);
  const inserted = suggestion.edits.filter((edit) => edit.text !== '').map((edit) => ({ at: edit.range.end, text: ghostText(edit.text) }));
  const first = suggestion.edits[0].range.start.line;
  if (lineVisible(first, layout)) {
    return { removed, inserted };
  }
  return { removed, inserted, hint: { line: layout.cursor.line, text: hintText(suggestion) } };
}

// -- Tab ----------------------------------------------------------------------------------

/**
 * What Tab does: `apply` when the cursor is on a line of the first edit (the user sees where
 * the group lands), else `jump` there first (reveal it and move the cursor to its start), so
 * that an edit elsewhere, on screen or not, is never applied unseen.
 */
export function tabAction(suggestion: NextEdit, cursor: LspPosition): 'jump' | 'apply' {
  const { start, end } = suggestion.edits[0].range;
  return start.line <= cursor.line && cursor.line <= end.line ? 'apply' : 'jump';
}

// -- what became of it --------------------------------------------------------------------

export interface NextEditMessage {
  readonly method: typeof DID_SHOW_NEXT_EDIT | typeof DID_ACCEPT_NEXT_EDIT | typeof DID_REJECT_NEXT_EDIT;
  readonly params: { readonly id: string };
}

export const accepted = (id: string): NextEditMessage => ({ method: DID_ACCEPT_NEXT_EDIT, params: { id } });
export const rejected = (id: string): NextEditMessage => ({ method: DID_REJECT_NEXT_EDIT, params: { id } });
const shownMessage = (id: string): NextEditMessage => ({ method: DID_SHOW_NEXT_EDIT, params: { id } });

/**
 * The suggestion on screen (one at most, in the active editor) and the notifications its
 * changes make: shown once when drawn; rejected when it goes without being applied (Esc, an
 * edit, another editor, a new suggestion); accepted when applied.
 */
export class NextEditTracker {
  private shown: NextEdit | undefined;

  get current(): NextEdit | undefined {
    return this.shown;
  }

  /** A suggestion drawn: reported shown; the one drawn before it, if another, rejected. */
  show(suggestion: NextEdit): NextEditMessage[] {
    const previous = this.shown;
    this.shown = suggestion;
    if (previous?.id === suggestion.id) {
      return []; // drawn again (the cursor moved, the editor scrolled): reported once
    }
    return previous === undefined ? [shownMessage(suggestion.id)] : [rejected(previous.id), shownMessage(suggestion.id)];
  }

  /** It went away without being applied (Esc, another editor, turned off). */
  reject(): NextEditMessage[] {
    const previous = this.shown;
    this.shown = undefined;
    return previous === undefined ? [] : [rejected(previous.id)];
  }

  /** A document changed: a suggestion for it, drawn at another version, is stale (rejected). */
  edited(document: DocumentAt): NextEditMessage[] {
    const shown = this.shown;
    if (shown === undefined || shown.uri !== document.uri || shown.version === document.version) {
      return [];
    }
    return this.reject();
  }

  /** The document closed or left the active editor. */
  left(uri: string): NextEditMessage[] {
    return this.shown?.uri === uri ? this.reject() : [];
  }

  /**
   * Tab applies it: the suggestion, taken off screen (its own edit must not reject it), or
   * undefined when none is shown. The caller reports `accepted` or `rejected` once it knows
   * whether the edit went in.
   */
  take(): NextEdit | undefined {
    const shown = this.shown;
    this.shown = undefined;
    return shown;
  }

  /** A new server process: the old one's ids mean nothing to it. */
  reset(): void {
    this.shown = undefined;
  }
}
