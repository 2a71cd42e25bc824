/**
 * The suggestion lifecycle, VS Code side: which of the server's suggestions VS Code showed,
 * and what became of them, turned into the server's `lspInfer/did…Suggestion` notifications.
 * Pure (no `vscode` import): the extension feeds it what it sees and sends what it returns.
 *
 * What VS Code's stable API lets an extension see (1.91 to 1.139; read from 1.139's source):
 * the provider's answers, and the item's command, which VS Code runs when the item is accepted
 * whole. `handleDidShowCompletionItem`, `handleDidPartiallyAcceptCompletionItem` and
 * `handleEndOfLifetime` exist only in the `inlineCompletionsAdditions` API proposal: VS Code
 * throws when a provider has them without the proposal enabled, which needs a command-line
 * flag, and the Marketplace refuses extensions that declare proposals. So:
 *
 * - shown: the first item of an answer to a request VS Code has not cancelled (VS Code shows
 *   the first item of the answer to its latest request);
 * - accepted: the item's command (`lspInfer.acceptSuggestion`), which goes to the server
 *   itself; here it only ends the shown suggestion;
 * - partly accepted: the extension's own Accept Next Word / Line commands (bound to VS Code's
 *   keys for them) run VS Code's and then report how much of the item is in the document;
 * - dismissed: the shown suggestion is replaced, in its document, by an answer that offers
 *   something else or nothing (the user typed something else, went elsewhere, or pressed
 *   Escape and typed on), by the acceptance of another of the same answer's items (cycled to
 *   with Alt+]), or its document closed or stopped being the active editor. The server
 *   ignores the dismissal of an item whose rest (after typing into it) was shown since.
 */

export const ACCEPT_SUGGESTION = 'lspInfer.acceptSuggestion';
export const DID_SHOW = 'lspInfer/didShowSuggestion';
export const DID_PARTIALLY_ACCEPT = 'lspInfer/didPartiallyAcceptSuggestion';
export const DID_DISMISS = 'lspInfer/didDismissSuggestion';

export interface LifecycleMessage {
  readonly method: typeof DID_SHOW | typeof DID_PARTIALLY_ACCEPT | typeof DID_DISMISS;
  readonly params: { readonly id: string; readonly acceptedLength?: number };
}

/** One item of an answer: the server's id, its text, and the document offset it starts at. */
export interface Offered {
  readonly id: string;
  readonly text: string;
  readonly start: number;
}

/** The id in an item's `lspInfer.acceptSuggestion` command, if it is one of the server's. */
export function suggestionId(command: unknown): string | undefined {
  if (typeof command !== 'object' || command === null) {
    return undefined;
  }
  const { command: name, arguments: args } = command as { command?: unknown; arguments?: unknown };
  if (name !== ACCEPT_SUGGESTION || !Array.isArray(args) || args.length !== 1) {
    return undefined;
  }
  const id = (args[0] as { id?: unknown } | null)?.id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** Characters as the server counts them (Unicode code points, not UTF-16 units). */
export function characters(text: string): number {
  return [...text].length;
}

interface Shown {
  readonly item: Offered;
  /** The ids of the whole answer it came in (choices). */
  readonly answer: readonly string[];
  acceptedLength: number;
}

const show = (id: string): LifecycleMessage => ({ method: DID_SHOW, params: { id } });
const dismiss = (id: string): LifecycleMessage => ({ method: DID_DISMISS, params: { id } });

export class SuggestionTracker {
  /** The suggestion on screen per document (uri), as far as the extension can tell. */
  private readonly shown = new Map<string, Shown>();

  /**
   * An answer VS Code received for a request it still wanted. Its first item is shown (the
   * "shown" goes first, so that the server knows the rest of a suggestion is on screen before
   * the item it continues is dismissed).
   */
  answered(document: string, items: readonly Offered[]): LifecycleMessage[] {
    const previous = this.shown.get(document);
    const first = items[0];
    if (first !== undefined && first.id === previous?.item.id) {
      return []; // the same item again (asked again, e.g. when cycling through choices)
    }
    const messages: LifecycleMessage[] = [];
    if (first === undefined) {
      this.shown.delete(document);
    } else {
      this.shown.set(document, { item: first, answer: items.map((item) => item.id), acceptedLength: 0 });
      messages.push(show(first.id));
    }
    if (previous !== undefined) {
      messages.push(dismiss(previous.item.id));
    }
    return messages;
  }

  /** An item's accept command ran: its suggestion is done; a different one shown from the
   * same answer (the user cycled to another choice) was dismissed. */
  accepted(id: string): LifecycleMessage[] {
    for (const [document, shown] of this.shown) {
      if (shown.item.id === id) {
        this.shown.delete(document);
        return [];
      }
      if (shown.answer.includes(id)) {
        this.shown.delete(document);
        return [dismiss(shown.item.id)];
      }
    }
    return [];
  }

  /**
   * After a partial accept in `document`: `inDocument(start)` is the document's text from an
   * offset to the cursor. Reports how much of the shown item is now in the document, counted
   * from its start (what was typed of it included, as VS Code's own acceptedLength), when that
   * is more than before and the text there still is the item's.
   */
  partlyAccepted(document: string, inDocument: (start: number) => string | undefined): LifecycleMessage[] {
    const shown = this.shown.get(document);
    if (shown === undefined) {
      return [];
    }
    const text = inDocument(shown.item.start);
    if (text === undefined || text === '' || !shown.item.text.startsWith(text)) {
      return [];
    }
    const acceptedLength = characters(text);
    if (acceptedLength <= shown.acceptedLength) {
      return [];
    }
    shown.acceptedLength = acceptedLength;
    if (text === shown.item.text) {
      this.shown.delete(document); // all of it: VS Code runs the item's command (accepted)
      return [];
    }
    return [{ method: DID_PARTIALLY_ACCEPT, params: { id: shown.item.id, acceptedLength } }];
  }

  /** The document closed, or is no longer in the active editor: its suggestion went away. */
  left(document: string): LifecycleMessage[] {
    const shown = this.shown.get(document);
    this.shown.delete(document);
    return shown === undefined ? [] : [dismiss(shown.item.id)];
  }

  /** Every document but `active` (the active editor's, if any) is left. */
  focused(active: string | undefined): LifecycleMessage[] {
    return [...this.shown.keys()].filter((document) => document !== active).flatMap((document) => this.left(document));
  }

  /** A new server process: the old one's ids mean nothing to it. */
  reset(): void {
    this.shown.clear();
  }
}
