/**
 * Which command starts the language server, and whether it can be found.
 *
 * Pure: the file system, environment and platform come in as a `Host`, so every case
 * (PATH lookup, Windows extensions, missing files) is unit-tested on any machine.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

export const DEFAULT_COMMAND: readonly string[] = ['lsp-infer', 'serve'];
export const INSTALL_HINT = "pip install 'lsp-infer[model]'";

export interface Host {
  readonly platform: NodeJS.Platform;
  readonly env: { readonly [name: string]: string | undefined };
  readonly homedir: string;
  /** The first workspace folder's path, for relative paths and `${workspaceFolder}`. */
  readonly workspaceFolder?: string;
  /** True if `file` exists, is a regular file and (on POSIX) may be executed. */
  isExecutableFile(file: string): boolean;
  /** True if anything exists at `file`. */
  exists(file: string): boolean;
}

export interface ServerCommand {
  readonly command: string;
  readonly args: readonly string[];
  /** Which setting the command came from (for messages). */
  readonly source: 'lspInfer.server.command' | 'lspInfer.server.pythonPath';
}

export interface CommandProblem {
  /** What is wrong, one sentence. */
  readonly problem: string;
  /** How to fix it, one or two sentences. */
  readonly fix: string;
  /** The setting to open from the message's button. */
  readonly setting: 'lspInfer.server.command' | 'lspInfer.server.pythonPath';
}

export type Resolution = ({ readonly ok: true } & ServerCommand) | ({ readonly ok: false } & CommandProblem);

/** One line for logs and messages: the command as you would type it in a shell. */
export function formatCommand(command: string, args: readonly string[]): string {
  return [command, ...args].map((part) => (/^[\w@%+=:,./\\-]+$/.test(part) ? part : JSON.stringify(part))).join(' ');
}

/**
 * Split a command line into words. Double and single quotes group; backslashes are kept as
 * they are (Windows paths). `"C:\Program Files\x\lsp-infer.exe" serve` → 2 words.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let current = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (const ch of line) {
    if (quote !== undefined) {
      if (ch === quote) {
        quote = undefined;
      } else {
        current += ch;
      }
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) {
        words.push(current);
        current = '';
        inWord = false;
      }
    } else {
      current += ch;
      inWord = true;
    }
  }
  if (inWord) {
    words.push(current);
  }
  return words;
}

/** `~`, `${userHome}`, `${workspaceFolder}` and `${env:NAME}` in a path-like setting. */
export function expandVariables(value: string, host: Host): string {
  let result = value.replace(/\$\{(userHome|workspaceFolder|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (match, name: string, envName?: string) => {
    if (name === 'userHome') {
      return host.homedir;
    }
    if (name === 'workspaceFolder') {
      return host.workspaceFolder ?? match;
    }
    return host.env[envName ?? ''] ?? '';
  });
  if (result === '~' || result.startsWith('~/') || result.startsWith('~\\')) {
    result = host.homedir + result.slice(1);
  }
  return result;
}

function pathApi(host: Host): path.PlatformPath {
  return host.platform === 'win32' ? path.win32 : path.posix;
}

function envValue(host: Host, name: string): string | undefined {
  if (host.platform !== 'win32') {
    return host.env[name];
  }
  // Windows environment names are case-insensitive (Path, PATH).
  const key = Object.keys(host.env).find((k) => k.toUpperCase() === name.toUpperCase());
  return key === undefined ? undefined : host.env[key];
}

function windowsExtensions(host: Host): string[] {
  const pathext = envValue(host, 'PATHEXT') ?? '.COM;.EXE;.BAT;.CMD';
  return pathext.split(';').filter((ext) => ext !== '');
}

/** Candidates for one file name: itself, and on Windows with each PATHEXT extension added. */
function candidates(file: string, host: Host): string[] {
  if (host.platform !== 'win32' || pathApi(host).extname(file) !== '') {
    return [file];
  }
  return [file, ...windowsExtensions(host).flatMap((ext) => [file + ext.toLowerCase(), file + ext])];
}

function hasSeparator(file: string, host: Host): boolean {
  return file.includes('/') || (host.platform === 'win32' && file.includes('\\'));
}

/**
 * The full path of an executable: a path (with a separator) is resolved against the workspace
 * folder and checked; a bare name is looked up on PATH. `undefined` when not found.
 */
export function findExecutable(file: string, host: Host): string | undefined {
  const p = pathApi(host);
  if (hasSeparator(file, host) || p.isAbsolute(file)) {
    const full = p.isAbsolute(file) ? file : p.resolve(host.workspaceFolder ?? p.resolve('.'), file);
    return candidates(full, host).find((c) => host.isExecutableFile(c));
  }
  const dirs = (envValue(host, 'PATH') ?? '').split(p.delimiter).filter((d) => d !== '');
  for (const dir of dirs) {
    const found = candidates(p.join(expandVariables(dir, host), file), host).find((c) => host.isExecutableFile(c));
    if (found !== undefined) {
      return found;
    }
  }
  return undefined;
}

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/**
 * The server command from the two settings, before any lookup: `pythonPath` (if set) wins and
 * runs `python -m lsp_infer serve`; else `command`, an array of words or one command line.
 */
export function serverCommandLine(
  command: unknown,
  pythonPath: unknown,
): ({ ok: true; argv: string[]; source: ServerCommand['source'] }) | ({ ok: false } & CommandProblem) {
  if (!isEmpty(pythonPath)) {
    if (typeof pythonPath !== 'string') {
      return {
        ok: false,
        problem: `lspInfer.server.pythonPath must be a string, not ${JSON.stringify(pythonPath)}.`,
        fix: 'Set it to the python executable of the environment where lsp-infer is installed, or clear it.',
        setting: 'lspInfer.server.pythonPath',
      };
    }
    return { ok: true, argv: [pythonPath.trim(), '-m', 'lsp_infer', 'serve'], source: 'lspInfer.server.pythonPath' };
  }
  let argv: string[];
  if (command === undefined || command === null) {
    argv = [...DEFAULT_COMMAND];
  } else if (typeof command === 'string') {
    argv = splitCommandLine(command);
  } else if (Array.isArray(command) && command.every((word) => typeof word === 'string')) {
    argv = [...(command as string[])];
  } else {
    return {
      ok: false,
      problem: `lspInfer.server.command must be a list of strings (or one command line), not ${JSON.stringify(command)}.`,
      fix: `Use for example ["lsp-infer", "serve"], or reset it to its default.`,
      setting: 'lspInfer.server.command',
    };
  }
  if (argv.length === 0 || argv[0].trim() === '') {
    return {
      ok: false,
      problem: 'lspInfer.server.command is empty.',
      fix: 'Reset it to its default ["lsp-infer", "serve"], or give the full path of lsp-infer followed by "serve".',
      setting: 'lspInfer.server.command',
    };
  }
  return { ok: true, argv, source: 'lspInfer.server.command' };
}

/** The command to spawn, or what is wrong with the settings and how to fix it. */
export function resolveServerCommand(command: unknown, pythonPath: unknown, host: Host): Resolution {
  const line = serverCommandLine(command, pythonPath);
  if (!line.ok) {
    return line;
  }
  const [first, ...rest] = line.argv;
  const executable = expandVariables(first, host);
  const args = rest.map((arg) => expandVariables(arg, host));
  const found = findExecutable(executable, host);
  if (found !== undefined) {
    return { ok: true, command: found, args, source: line.source };
  }
  const isPath = hasSeparator(executable, host) || pathApi(host).isAbsolute(executable);
  const what = isPath
    ? host.exists(executable)
      ? `\`${executable}\` is not an executable file`
      : `\`${executable}\` does not exist`
    : `\`${executable}\` is not on PATH`;
  if (line.source === 'lspInfer.server.pythonPath') {
    return {
      ok: false,
      problem: `The Python for the lsp-infer server was not found: ${what} (lspInfer.server.pythonPath).`,
      fix: `Set lspInfer.server.pythonPath to the python of an environment where you ran ${INSTALL_HINT}, or clear it to use lspInfer.server.command.`,
      setting: 'lspInfer.server.pythonPath',
    };
  }
  const isDefault = line.argv.length === DEFAULT_COMMAND.length && line.argv.every((word, i) => word === DEFAULT_COMMAND[i]);
  return {
    ok: false,
    problem: `The lsp-infer language server was not found: ${what}${isDefault ? '' : ' (lspInfer.server.command)'}.`,
    fix:
      `Install it with ${INSTALL_HINT} (VS Code must see it on PATH: restart VS Code after installing), ` +
      'or set lspInfer.server.command to its full path (e.g. ["/path/to/venv/bin/lsp-infer", "serve"]) ' +
      'or lspInfer.server.pythonPath to the python of the environment where it is installed.',
    setting: 'lspInfer.server.command',
  };
}

/** The real machine, for the extension (tests pass their own `Host`). */
export function nodeHost(workspaceFolder: string | undefined): Host {
  return {
    platform: process.platform,
    env: process.env,
    homedir: os.homedir(),
    workspaceFolder,
    isExecutableFile(file: string): boolean {
      try {
        if (!fs.statSync(file).isFile()) {
          return false;
        }
        if (process.platform !== 'win32') {
          fs.accessSync(file, fs.constants.X_OK);
        }
        return true;
      } catch {
        return false;
      }
    },
    exists: (file: string) => fs.existsSync(file),
  };
}
