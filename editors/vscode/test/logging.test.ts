import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { redactingChannel } from '../src/logging';
import { RestartPolicy } from '../src/restartPolicy';
import { failureHint, parseServerLogLine } from '../src/serverLog';
import { REDACTED } from '../src/settings';

class FakeChannel {
  readonly lines: string[] = [];
  #level = 2; // a private field, as VS Code's own channel has: `this` must be the target
  get logLevel(): number {
    return this.#level;
  }
  info(message: string, ...args: unknown[]): void {
    this.lines.push(['info', message, ...args.map(String)].join(' '));
  }
  error(message: string | Error, ...args: unknown[]): void {
    this.lines.push(['error', String(message), ...args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a)))].join(' '));
  }
  trace(message: string): void {
    this.lines.push(`trace ${message}`);
  }
  appendLine(message: string): void {
    this.lines.push(`line ${message}`);
  }
  show(): string {
    return 'shown';
  }
}

describe('redactingChannel', () => {
  const key = 'sk-team-abcdef123456';
  test('the API key never reaches the channel, whatever method or argument carries it', () => {
    let current: string | undefined = key;
    const raw = new FakeChannel();
    const channel = redactingChannel(raw, () => [current]);
    channel.info(`settings {"team":{"apiKey":"${key}"}}`);
    channel.trace(`Sending request 'initialize' Params: ${JSON.stringify({ initializationOptions: { team: { apiKey: key } } })}`);
    channel.appendLine(key);
    channel.error(new Error(`bad key ${key}`));
    channel.error('params', { team: { apiKey: key } });
    assert.ok(raw.lines.every((line) => !line.includes(key)), raw.lines.join('\n'));
    assert.equal(raw.lines.filter((line) => line.includes(REDACTED)).length, 5);
    current = undefined;
    channel.info('plain');
    assert.equal(raw.lines.at(-1), 'info plain');
  });

  test('everything else passes through: properties, other methods, private state', () => {
    const raw = new FakeChannel();
    const channel = redactingChannel(raw, () => [key]);
    assert.equal(channel.logLevel, 2);
    assert.equal(channel.show(), 'shown');
    channel.info('hello', 'world');
    assert.deepEqual(raw.lines, ['info hello world']);
  });
});

describe('server stderr', () => {
  test('Python log lines keep their level and lose their time stamp', () => {
    assert.deepEqual(parseServerLogLine('2025-01-02 03:04:05,678 INFO lsp_infer.server: model loaded'), {
      level: 'info',
      text: 'lsp_infer.server: model loaded',
    });
    assert.equal(parseServerLogLine('2025-01-02 03:04:05,678 WARNING lsp_infer: x').level, 'warn');
    assert.equal(parseServerLogLine('2025-01-02 03:04:05,678 ERROR lsp_infer: x').level, 'error');
    assert.equal(parseServerLogLine('2025-01-02 03:04:05,678 DEBUG lsp_infer: x').level, 'debug');
    assert.equal(parseServerLogLine('CRITICAL boom').level, 'error');
  });

  test('lines without a level continue the one before; a traceback is an error', () => {
    assert.deepEqual(parseServerLogLine('Traceback (most recent call last):', 'info'), { level: 'error', text: 'Traceback (most recent call last):' });
    assert.deepEqual(parseServerLogLine('  File "x.py", line 1', 'error'), { level: 'error', text: '  File "x.py", line 1' });
    assert.deepEqual(parseServerLogLine('llama_model_loader: loaded meta data\r', 'debug'), { level: 'debug', text: 'llama_model_loader: loaded meta data' });
  });

  test('known failures give a fix', () => {
    assert.match(failureHint("/usr/bin/python3: No module named lsp_infer") ?? '', /pip install 'lsp-infer\[model\]'/);
    assert.match(failureHint("ModuleNotFoundError: No module named 'llama_cpp'") ?? '', /llama-cpp-python/);
    assert.equal(failureHint('INFO all good'), undefined);
  });
});

describe('RestartPolicy (like vscode-languageclient: 4 restarts, then give up within 3 minutes)', () => {
  test('a crash loop gives up at the 5th crash', () => {
    let now = 0;
    const policy = new RestartPolicy(4, 180_000, () => now);
    for (let i = 1; i <= 4; i++) {
      now += 1000;
      assert.deepEqual(policy.onCrash(), { restart: true, crashes: i });
    }
    now += 1000;
    assert.deepEqual(policy.onCrash(), { restart: false, crashes: 5 });
  });

  test('crashes spread over more than 3 minutes keep restarting', () => {
    let now = 0;
    const policy = new RestartPolicy(4, 180_000, () => now);
    for (let i = 0; i < 20; i++) {
      now += 60_000;
      assert.equal(policy.onCrash().restart, true, `crash ${i}`);
    }
  });

  test('a polite, growing pause before each restart', () => {
    const policy = new RestartPolicy();
    assert.deepEqual([1, 2, 3, 4, 5, 9].map((n) => policy.delayMs(n)), [500, 1000, 2000, 4000, 8000, 8000]);
  });

  test('reset (a restart the user asked for) starts a fresh count', () => {
    const policy = new RestartPolicy(1, 180_000, () => 0);
    assert.equal(policy.onCrash().restart, true);
    assert.equal(policy.onCrash().restart, false);
    policy.reset();
    assert.equal(policy.onCrash().restart, true);
  });
});
