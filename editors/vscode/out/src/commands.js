"use strict";
/**
 * Command ids, the status bar menu, and the requests the commands send. Pure.
 *
 * The extension's own commands use `lsp-infer.*`; the server's `workspace/executeCommand`
 * commands are `lspInfer.*`. They must differ: vscode-languageclient registers a VS Code
 * command for every command the server advertises in `executeCommandProvider.commands`, and
 * registering the same id twice fails.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.SERVER_COMMANDS = exports.COMMANDS = void 0;
exports.refactorFileParams = refactorFileParams;
exports.refactorFilesParams = refactorFilesParams;
exports.serverHasCommand = serverHasCommand;
exports.openFileUris = openFileUris;
exports.validateInstruction = validateInstruction;
exports.toggleTarget = toggleTarget;
exports.menuItems = menuItems;
exports.COMMANDS = {
    refactorFile: 'lsp-infer.refactorFile',
    refactorOpenFiles: 'lsp-infer.refactorOpenFiles',
    toggleCompletions: 'lsp-infer.toggleCompletions',
    showStats: 'lsp-infer.showStats',
    restartServer: 'lsp-infer.restartServer',
    setTeamApiKey: 'lsp-infer.setTeamApiKey',
    showOutput: 'lsp-infer.showOutput',
    showMenu: 'lsp-infer.showMenu',
};
/** The server's commands (team tier), run through `workspace/executeCommand`. */
exports.SERVER_COMMANDS = {
    refactorFile: 'lspInfer.refactorFile',
    refactorFiles: 'lspInfer.refactorFiles',
};
/** `lspInfer.refactorFile` takes ONE argument: `{uri, instruction}`. */
function refactorFileParams(uri, instruction) {
    return { command: exports.SERVER_COMMANDS.refactorFile, arguments: [{ uri, instruction: instruction.trim() }] };
}
/** `lspInfer.refactorFiles` takes ONE argument: `{uris, instruction}`. */
function refactorFilesParams(uris, instruction) {
    return { command: exports.SERVER_COMMANDS.refactorFiles, arguments: [{ uris: [...uris], instruction: instruction.trim() }] };
}
/** Whether the running server advertises a command (older servers and no team tier: no). */
function serverHasCommand(advertised, command) {
    return advertised !== undefined && advertised.includes(command);
}
/** The URIs of the open text documents that are files on disk, each once, in order. */
function openFileUris(documents) {
    const uris = [];
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
function validateInstruction(value) {
    return value.trim() === '' ? 'Describe the change, e.g. "add type hints"' : undefined;
}
/**
 * Toggle `lspInfer.completion.enabled` where it takes effect: in the most specific scope that
 * sets it (writing to user settings while the workspace says `false` would change nothing).
 */
function toggleTarget(inspect) {
    if (inspect?.workspaceFolderValue !== undefined) {
        return 'workspaceFolder';
    }
    if (inspect?.workspaceValue !== undefined) {
        return 'workspace';
    }
    return 'global';
}
function menuItems(state) {
    const items = [
        {
            label: state.enabled ? '$(circle-slash) Turn completions off' : '$(check) Turn completions on',
            description: 'lspInfer.completion.enabled',
            command: exports.COMMANDS.toggleCompletions,
        },
        { label: '$(graph) Show stats', description: state.serverRunning ? undefined : 'server not running', command: exports.COMMANDS.showStats },
        { label: '$(output) Show output', command: exports.COMMANDS.showOutput },
        { label: '$(debug-restart) Restart server', command: exports.COMMANDS.restartServer },
    ];
    if (state.hasActiveFile) {
        items.push({
            label: '$(wand) Refactor file…',
            description: state.canRefactor ? undefined : 'needs the team tier',
            command: exports.COMMANDS.refactorFile,
        });
    }
    items.push({ label: '$(files) Refactor open files…', description: state.canRefactor ? undefined : 'needs the team tier', command: exports.COMMANDS.refactorOpenFiles }, { label: '$(key) Set team API key…', command: exports.COMMANDS.setTeamApiKey });
    return items;
}
//# sourceMappingURL=commands.js.map