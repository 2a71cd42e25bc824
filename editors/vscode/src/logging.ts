/**
 * A log output channel that never shows a secret: every message passing through it (ours,
 * vscode-languageclient's, its message traces, the server's stderr) has the secrets replaced.
 * The team API key travels in initializationOptions and configuration responses, which the
 * client prints when `lspInfer.trace.server` is `verbose`; this is what keeps it out.
 *
 * Only a type is imported from `vscode`, so this module runs (and is tested) without it.
 */
import type { LogOutputChannel } from 'vscode';
import { redactText } from './settings';

const TEXT_METHODS = new Set(['append', 'appendLine', 'replace', 'trace', 'debug', 'info', 'warn', 'error']);

function redactArgument(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') {
    return redactText(value, secrets);
  }
  if (value instanceof Error) {
    const text = value.stack ?? `${value.name}: ${value.message}`;
    const redacted = redactText(text, secrets);
    return redacted === text ? value : redacted;
  }
  if (typeof value === 'object' && value !== null) {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      return value;
    }
    if (json !== undefined && redactText(json, secrets) !== json) {
      return redactText(json, secrets);
    }
  }
  return value;
}

export function redactingChannel<T extends Pick<LogOutputChannel, 'info'>>(channel: T, secrets: () => readonly (string | undefined)[]): T {
  return new Proxy(channel, {
    get(target, property) {
      // The target as `this`: VS Code's channel may keep its state in private fields.
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== 'function') {
        return value;
      }
      if (typeof property === 'string' && TEXT_METHODS.has(property)) {
        return (...args: unknown[]) => {
          const current = secrets().filter((s): s is string => typeof s === 'string' && s !== '');
          return (value as (...a: unknown[]) => unknown).apply(
            target,
            current.length === 0 ? args : args.map((arg) => redactArgument(arg, current)),
          );
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}
