/**
 * Command ids, the status bar menu, and the requests the commands send. Pure.
 *
 * The extension's own commands use `lsp-infer.*`; the server's `workspace/executeCommand`
 * commands are `lspInfer.*`. They must differ: vscode-languageclient registers a VS Code
 * command for every command the server advertises in `executeCommandProvider.commands`, and
 * registering the same id twice fails.
 */

export const COMMANDS = {
  refactorFile: 'lsp-infer.refactorFile',
  refactorOpenFiles: 'lsp-infer.refactorOpenFiles',
  toggleCompletions: 'lsp-infer.toggleCompletions',
  showStats: 'lsp-infer.showStats',
  restartServer: 'lsp-infer.restartServer',
  setTeamApiKey: 'lsp-infer.setTeamApiKey',
  showOutput: 'lsp-infer.showOutput',
  showMenu: 'lsp-infer.showMenu',
  acceptNextWord: 'lsp-infer.acceptNextWord',
  acceptNextLine: 'lsp-infer.acceptNextLine',
  /** Tab while a next edit is shown: go to it, then apply it. */
  nextEditAccept: 'lsp-infer.nextEdit.accept',
  /** Escape while a next edit is shown: dismiss it. */
  nextEditDismiss: 'lsp-infer.nextEdit.dismiss',
} as const;

export type CommandId = (typeof COMMANDS)[keyof typeof COMMANDS];

/** The server's commands (team tier), run through `workspace/executeCommand`. */
export const SERVER_COMMANDS = {
  refactorFile: 'lspInfer.refactorFile',
  refactorFiles: 'lspInfer.refactorFiles',
} as const;

export interface ExecuteCommandParams {
  readonly command: string;
  readonly arguments: unknown[];
}

/** `lspInfer.refactorFile` takes ONE argument: `{uri, instruction}`. */
export function refactorFileParams(uri: string, instruction: string): ExecuteCommandParams {
  return { command: SERVER_COMMANDS.refactorFile, arguments: [{ uri, instruction: instruction.trim() }] };
}

/** `lspInfer.refactorFiles` takes ONE argument: `{uris, instruction}`. */
export function refactorFilesParams(uris: readonly string[], instruction: string): ExecuteCommandParams {
  return { command: SERVER_COMMANDS.refactorFiles, arguments: [{ uris: [...uris], instruction: instruction.trim() }] };
}

/** Whether the running server advertises a command (older servers and no team tier: no). */
export function serverHasCommand(advertised: readonly string[] | undefined, command: string): boolean {
  return advertised !== undefined && advertised.includes(command);
}

export interface DocumentLike {
  readonly uri: { readonly scheme: string; toString(): string };
  readonly isClosed?: boolean;
}

/** The URIs of the open text documents that are files on disk, each once, in order. */
export function openFileUris(documents: readonly DocumentLike[]): string[] {
  const uris: string[] = [];
  for (const document of documents) {
    if (document.uri.scheme !== 'file' || document.isClosed === true) {
      continue;
    }
    const uri = document.uri.toString();
    if (!uris.includes(uri)) {
      uris.push(uri);
    }
  }
  return uris;
}

/** Input box validation for an instruction: a message, or undefined when it is fine. */
export function validateInstruction(value: string): string | undefined {
  return value.trim() === '' ? 'Describe the change, e.g. "add type hints"' : undefined;
}

/** Where VS Code reports a setting's values (`WorkspaceConfiguration.inspect`). */
export interface InspectLike<T> {
  readonly globalValue?: T;
  readonly workspaceValue?: T;
  readonly workspaceFolderValue?: T;
}

export type ConfigTarget = 'global' | 'workspace' | 'workspaceFolder';

/**
 * Toggle `lspInfer.completion.enabled` where it takes effect: in the most specific scope that
 * sets it (writing to user settings while the workspace says `false` would change nothing).
 */
export function toggleTarget(inspect: InspectLike<unknown> | undefined): ConfigTarget {
  if (inspect?.workspaceFolderValue !== undefined) {
    return 'workspaceFolder';
  }
  if (inspect?.workspaceValue !== undefined) {
    return 'workspace';
  }
  return 'global';
}

/** Settings a status-bar menu can read (a subset of the extension's state). */
export interface MenuState {
  readonly enabled: boolean;
  readonly serverRunning: boolean;
  readonly hasActiveFile: boolean;
  readonly canRefactor: boolean;
}

export interface MenuItem {
  readonly label: string;
  readonly description?: string;
  readonly command: CommandId;
}

export function menuItems(state: MenuState): MenuItem[] {
  const items: MenuItem[] = [
    {
      label: state.enabled ? '$(circle-slash) Turn completions off' : '$(check) Turn completions on',
      description: 'lspInfer.completion.enabled',
      command: COMMANDS.toggleCompletions,
    },
    { label: '$(graph) Show stats', description: state.serverRunning ? undefined : 'server not running', command: COMMANDS.showStats },
    { label: '$(output) Show output', command: COMMANDS.showOutput },
    { label: '$(debug-restart) Restart server', command: COMMANDS.restartServer },
  ];
  if (state.hasActiveFile) {
    items.push({
      label: '$(wand) Refactor file…',
      description: state.canRefactor ? undefined : 'needs the team tier',
      command: COMMANDS.refactorFile,
    });
  }
  items.push(
    { label: '$(files) Refactor open files…', description: state.canRefactor ? undefined : 'needs the team tier', command: COMMANDS.refactorOpenFiles },
    { label: '$(key) Set team API key…', command: COMMANDS.setTeamApiKey },
  );
  return items;
}
