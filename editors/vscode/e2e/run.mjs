// The extension in a real VS Code (code-server 4.139.1, VS Code 1.139) driven by a real headless
// Chromium through puppeteer-core, against the real `lsp-infer serve` and its default model.
//
// Run by `make vscode-e2e` with the Node 24 that editors/vscode/e2e/install.sh puts in the cache:
//   LSP_INFER_E2E_INSTALL  the install (default <repo>/.venv/vscode-e2e): node/, app/node_modules/
//   LSP_INFER_E2E_SERVER   the server executable (default <repo>/.venv/bin/lsp-infer)
//   LSP_INFER_E2E_CHROMIUM the browser (default /usr/bin/chromium, else chromium-headless-shell)
//   LSP_INFER_E2E_VSIX     the extension package (default editors/vscode/lsp-infer-<version>.vsix)
//   LSP_INFER_E2E_RESULTS  screenshots and logs (default editors/vscode/e2e-results, emptied first)
//
// Scenarios (each its own code-server, user data, extensions and workspace):
//   completion   status bar goes ready; typing `    return ` under `def add(a, b):` shows ghost
//                text; Tab accepts it; Ctrl+S saves; the file on disk has more than was typed; the
//                status bar shows the suggestion's latency; the lsp-infer output channel shows the
//                server's start and its model. The suggestion lifecycle: "lsp-infer: Show Stats"
//                opens the stats view (a webview with the latency chart and acceptance bars) and
//                logs lspInfer/stats to the output channel, where the server counts exactly one
//                accepted suggestion, at least one shown, a shown→accepted time, and at least
//                one warm (lspInfer/warm: the cursor in the opened file). Then, under
//                `def sub(a, b):`, Ctrl+Right (VS Code's Accept Next Word, which the extension
//                wraps) takes the first word of the ghost text, and the server counts it as a
//                partly accepted suggestion.
//   definitions  where names are defined, from VS Code's built-in TypeScript support: a workspace
//                of geometry.ts (exports `distance`) and main.ts (imports and calls it); only
//                main.ts is opened. Once TypeScript resolves the import (its hover over
//                `distance` in main.ts), typing a call of it and pausing makes the server ask
//                the editor (lspInfer/definitions); lspInfer/stats, logged to the output
//                channel, counts at least one request and one definition answered, the stats
//                view shows its definitions table, and geometry.ts was never opened.
//   cold-start   a better suggestion after a cold start (lspInfer/suggestionReady): a 160-line
//                Python file the server has not seen (the first lines of the stdlib's difflib.py),
//                no warm where the cursor rests, and a cold start's suggestion always hidden
//                (completion.coldStartConfidence 1) but the whole window's always shown
//                (minConfidence 0). Enter at the end of the file asks as typing does; with no
//                further keystroke, ghost text appears once the whole window is evaluated, and
//                lspInfer/stats counts the hidden answer, the notification sent, and the request
//                asked again answered from the cache (as Automatic: an Invoked one would run
//                the model for its choices).
//   next-edit    next-edit suggestions (lspInfer/nextEdit): in area.py (`def area(wdth, height)` and
//                `def double(wdth)`, each using its `wdth` on the next line), the first `wdth` is
//                double-clicked and `width` typed over it; after the pause the rename in the body
//                is drawn (`wdth` struck through, `width` as ghost text after it) on line 2 only;
//                Tab (twice when the first goes there) applies it: line 2 becomes
//                `    return width * height`, the saved file has `double` unchanged. Then the same
//                in `double` (wdth → count), dismissed with Escape: line 6 unchanged. Then far.py,
//                whose use is 80 lines below: a hint at the cursor's line (`line 82, Tab to go`),
//                Tab scrolls there, Tab applies, one Ctrl+Z takes it back (only it). lspInfer/stats
//                counts the shown, the two accepted and the rejected renames; the stats view shows
//                them.
//   bad-command  lspInfer.server.command points at a file that does not exist: the status bar
//                item turns to its error state and says why, an error notification says the
//                server was not found, and the output channel has the same error.
// Any failed check ends the run with exit status 1, a `FAIL` line naming the check, and a
// screenshot of that moment; every run leaves its screenshots and logs in the results folder.

import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXTENSION_DIR = path.resolve(HERE, '..');
const REPO = path.resolve(EXTENSION_DIR, '..', '..');
const INSTALL = path.resolve(process.env.LSP_INFER_E2E_INSTALL || path.join(REPO, '.venv', 'vscode-e2e'));
const SERVER = path.resolve(process.env.LSP_INFER_E2E_SERVER || path.join(REPO, '.venv', 'bin', 'lsp-infer'));
const RESULTS = path.resolve(process.env.LSP_INFER_E2E_RESULTS || path.join(EXTENSION_DIR, 'e2e-results'));
const VERSION = JSON.parse(fs.readFileSync(path.join(EXTENSION_DIR, 'package.json'), 'utf8')).version;
const VSIX = path.resolve(process.env.LSP_INFER_E2E_VSIX || path.join(EXTENSION_DIR, `lsp-infer-${VERSION}.vsix`));
const CHROMIUM =
  process.env.LSP_INFER_E2E_CHROMIUM ||
  ['/usr/bin/chromium', '/usr/bin/chromium-headless-shell'].find((file) => fs.existsSync(file)) ||
  '/usr/bin/chromium';
const CODE_SERVER = path.join(INSTALL, 'app', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const EXTENSION_ID = 'lsp-infer.lsp-infer';

// Generous: two cores, shared. Speed is not what is tested.
const SECONDS = 1000;
const T_CODE_SERVER = 120 * SECONDS;
const T_WORKBENCH = 120 * SECONDS;
const T_MODEL_READY = 300 * SECONDS;
const T_GHOST_TEXT = 120 * SECONDS;
/** After a cold start: the whole window evaluated in the background, then asked again. */
const T_COLD_GHOST = 60 * SECONDS;
const T_UI = 30 * SECONDS;
/** From the pause after an edit to the next edit drawn (no model work: a parse of the file). */
const T_NEXT_EDIT = 60 * SECONDS;

const FILE_TEXT = '"""Small arithmetic helpers."""\n\n\ndef add(a, b):\n';
const TYPED = '    return ';

const require = createRequire(path.join(INSTALL, 'app', 'package.json'));

// -- plumbing ------------------------------------------------------------------------------

const started = Date.now();
function log(message) {
  const line = `[e2e ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${message}`;
  console.log(line);
  fs.appendFileSync(path.join(RESULTS, 'e2e.log'), line + '\n');
}

class CheckFailed extends Error {}

function check(condition, message) {
  if (!condition) {
    throw new CheckFailed(message);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns a truthy value; fails with `what` after `timeoutMs`. */
async function waitFor(what, timeoutMs, probe, intervalMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
    } catch (error) {
      if (error instanceof CheckFailed) {
        throw error; // a definite failure seen by the probe: no point in waiting
      }
      last = undefined;
      if (Date.now() > deadline) {
        throw new CheckFailed(`timed out after ${timeoutMs / 1000} s waiting for ${what} (last error: ${error.message})`);
      }
    }
    if (last) {
      return last;
    }
    if (Date.now() > deadline) {
      throw new CheckFailed(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    }
    await sleep(intervalMs);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function preflight() {
  const problems = [];
  if (!fs.existsSync(CODE_SERVER)) {
    problems.push(`code-server is not installed at ${CODE_SERVER} (run: make vscode-e2e, which runs editors/vscode/e2e/install.sh)`);
  }
  if (!fs.existsSync(CHROMIUM)) {
    problems.push(`no Chromium at ${CHROMIUM} (Debian: apt-get install chromium; or set LSP_INFER_E2E_CHROMIUM)`);
  }
  if (!fs.existsSync(SERVER)) {
    problems.push(`no lsp-infer server at ${SERVER} (run: make .venv/.test-installed; or set LSP_INFER_E2E_SERVER)`);
  }
  if (!fs.existsSync(VSIX)) {
    problems.push(`no extension package at ${VSIX} (run: make vscode)`);
  }
  try {
    require.resolve('puppeteer-core');
  } catch {
    problems.push(`puppeteer-core is not installed under ${path.join(INSTALL, 'app')} (run: make vscode-e2e)`);
  }
  if (problems.length > 0) {
    for (const problem of problems) {
      console.error(`FAIL: ${problem}`);
    }
    process.exit(1);
  }
}

// -- one VS Code ---------------------------------------------------------------------------

/** A code-server with its own user data, extensions and workspace, and a browser page on it. */
class VSCode {
  constructor(name, settings) {
    this.name = name;
    this.settings = settings;
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), `lspinfer-vscode-${name}-`));
    this.userData = path.join(this.root, 'user-data');
    this.extensions = path.join(this.root, 'extensions');
    this.workspace = path.join(this.root, 'workspace');
    this.shots = 0;
  }

  async start(browserModule) {
    fs.mkdirSync(this.workspace, { recursive: true });
    const settingsText = JSON.stringify(this.settings, null, 2);
    // User settings, and the same as the server machine's settings: in code-server the window is
    // a remote one, where machine-scoped settings (lspInfer.server.*) come from Machine/.
    for (const dir of ['User', 'Machine']) {
      fs.mkdirSync(path.join(this.userData, dir), { recursive: true });
      fs.writeFileSync(path.join(this.userData, dir, 'settings.json'), settingsText);
    }
    fs.writeFileSync(path.join(this.root, 'config.yaml'), 'auth: none\ncert: false\n');
    fs.writeFileSync(path.join(RESULTS, `${this.name}-settings.json`), settingsText);

    const common = ['--config', path.join(this.root, 'config.yaml'), '--user-data-dir', this.userData, '--extensions-dir', this.extensions];
    log(`${this.name}: installing ${path.relative(REPO, VSIX)} into ${this.extensions}`);
    const install = spawnSync(process.execPath, [CODE_SERVER, ...common, '--install-extension', VSIX], {
      env: this.env(),
      encoding: 'utf8',
      timeout: 120 * SECONDS,
    });
    fs.writeFileSync(path.join(RESULTS, `${this.name}-install-extension.log`), `${install.stdout}\n${install.stderr}`);
    check(install.status === 0, `code-server --install-extension exited with ${install.status} ${install.signal ?? ''}: ${install.stderr}`);
    const installed = fs.readdirSync(this.extensions).filter((entry) => entry.startsWith(`${EXTENSION_ID}-`));
    check(installed.length === 1, `the extension is not in ${this.extensions} after --install-extension (found: ${fs.readdirSync(this.extensions)})`);
    log(`${this.name}: installed ${installed[0]}`);

    this.port = await freePort();
    const logFile = path.join(RESULTS, `${this.name}-code-server.log`);
    this.logFd = fs.openSync(logFile, 'w');
    this.process = spawn(
      process.execPath,
      [
        CODE_SERVER,
        ...common,
        '--auth', 'none',
        '--bind-addr', `127.0.0.1:${this.port}`,
        '--disable-telemetry',
        '--disable-update-check',
        '--disable-workspace-trust',
        '--disable-getting-started-override',
        '--ignore-last-opened',
        this.workspace,
      ],
      { env: this.env(), stdio: ['ignore', this.logFd, this.logFd], detached: true },
    ); // prettier-ignore
    this.exited = new Promise((resolve) => this.process.once('exit', (code, signal) => resolve(`${code ?? signal}`)));
    log(`${this.name}: code-server pid ${this.process.pid} on 127.0.0.1:${this.port} (log: ${path.relative(REPO, logFile)})`);
    await waitFor(`code-server to answer on 127.0.0.1:${this.port} (see ${logFile})`, T_CODE_SERVER, async () => {
      if (this.process.exitCode !== null || this.process.signalCode !== null) {
        throw new CheckFailed(`code-server exited (${await this.exited}): see ${logFile}`);
      }
      const response = await fetch(`http://127.0.0.1:${this.port}/healthz`);
      return response.ok;
    }, 500);

    this.browser = await browserModule.launch({
      executablePath: CHROMIUM,
      headless: true,
      userDataDir: path.join(this.root, 'chromium'),
      defaultViewport: { width: 1400, height: 900 },
      // As the machine notes say works here: no sandbox as root, no GPU, no network but loopback.
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      protocolTimeout: 180 * SECONDS,
    });
    this.page = await this.browser.newPage();
    const consoleLog = path.join(RESULTS, `${this.name}-browser-console.log`);
    fs.writeFileSync(consoleLog, '');
    this.page.on('console', (message) => fs.appendFileSync(consoleLog, `[${message.type()}] ${message.text()}\n`));
    this.page.on('pageerror', (error) => fs.appendFileSync(consoleLog, `[pageerror] ${error.message}\n`));
    const url = `http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(this.workspace)}`;
    log(`${this.name}: opening ${url} in ${CHROMIUM}`);
    await this.page.goto(url, { waitUntil: 'domcontentloaded', timeout: T_WORKBENCH });
    await this.page.waitForSelector('.monaco-workbench .part.statusbar', { timeout: T_WORKBENCH });
    log(`${this.name}: the workbench is up`);
  }

  env() {
    // The server must not pick up a developer's LSP_INFER_* overrides.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('LSP_INFER_')));
    env.PATH = `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ''}`;
    return env;
  }

  async screenshot(label) {
    this.shots += 1;
    const file = path.join(RESULTS, `${this.name}-${String(this.shots).padStart(2, '0')}-${label}.png`);
    try {
      await this.page.screenshot({ path: file });
      log(`${this.name}: screenshot ${path.relative(REPO, file)}`);
    } catch (error) {
      log(`${this.name}: no screenshot ${label}: ${error.message}`);
    }
    return file;
  }

  // -- the status bar item ------------------------------------------------------------------

  /** The extension's status bar item: its text, its icons, its background, or undefined. */
  async statusItem() {
    return this.page.evaluate(() => {
      const item = [...document.querySelectorAll('.part.statusbar .statusbar-item')].find((el) =>
        (el.id || '').endsWith('lspInfer.status'),
      );
      if (!item) {
        return undefined;
      }
      const label = item.querySelector('.statusbar-item-label') ?? item;
      const icons = [...item.querySelectorAll('.codicon')].flatMap((icon) =>
        [...icon.classList].filter((c) => c.startsWith('codicon-') && c !== 'codicon-modifier-spin'),
      );
      return {
        id: item.id,
        text: label.textContent.trim(),
        ariaLabel: label.getAttribute('aria-label') ?? '',
        icons,
        hasBackground: item.classList.contains('has-background-color'),
        background: getComputedStyle(item).backgroundColor,
      };
    });
  }

  /** Hovers the status bar item and returns its tooltip's text. */
  async statusTooltip() {
    const handle = await this.page.waitForSelector('.part.statusbar .statusbar-item[id$="lspInfer.status"]', { timeout: T_UI });
    await this.page.mouse.move(5, 5);
    await sleep(300);
    await handle.hover();
    const text = await waitFor('the status bar item tooltip', T_UI, () =>
      this.page.evaluate(() => {
        const hover = [...document.querySelectorAll('.workbench-hover, .monaco-hover')].find((el) => /lsp-infer/.test(el.textContent));
        return hover ? hover.textContent.trim() : undefined;
      }),
    );
    await this.page.mouse.move(700, 300);
    return text;
  }

  // -- the editor ---------------------------------------------------------------------------

  async runCommand(title) {
    await this.page.keyboard.press('F1');
    const input = await this.page.waitForSelector('.quick-input-widget .quick-input-box input', { visible: true, timeout: T_UI });
    await input.type(title, { delay: 20 });
    await waitFor(`"${title}" in the command palette`, T_UI, () =>
      this.page.evaluate(
        (title) =>
          [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some((row) =>
            (row.getAttribute('aria-label') || row.textContent).includes(title),
          ),
        title,
      ),
    );
    await this.page.keyboard.press('Enter');
    await this.page.waitForSelector('.quick-input-widget', { hidden: true, timeout: T_UI });
  }

  /**
   * Open `name` with Quick Open (Ctrl+P). Coming back from a webview (the stats view), the
   * workbench once took the Enter without opening the file (one run in five of the same
   * code): the whole sequence is tried up to three times.
   */
  async openFile(name) {
    const active = () =>
      this.page.evaluate(
        (name) => [...document.querySelectorAll('.tabs-container .tab.active')].some((tab) => tab.textContent.includes(name)),
        name,
      );
    for (let attempt = 1; ; attempt++) {
      await this.page.keyboard.down('Control');
      await this.page.keyboard.press('KeyP');
      await this.page.keyboard.up('Control');
      const input = await this.page.waitForSelector('.quick-input-widget .quick-input-box input', { visible: true, timeout: T_UI });
      await input.type(name, { delay: 20 });
      await waitFor(`${name} in quick open`, T_UI, () =>
        this.page.evaluate(
          (name) => [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some((row) => row.textContent.includes(name)),
          name,
        ),
      );
      await this.page.keyboard.press('Enter');
      try {
        await waitFor(`an editor tab for ${name}`, attempt < 3 ? T_UI / 3 : T_UI, active);
        break;
      } catch (error) {
        if (attempt >= 3 || !(error instanceof CheckFailed)) {
          throw error;
        }
        log(`quick open did not open ${name} (attempt ${attempt}); again`);
        await this.page.keyboard.press('Escape');
      }
    }
    await this.page.waitForSelector('.editor-group-container.active .monaco-editor .view-lines', { visible: true, timeout: T_UI });
  }

  /**
   * Ghost text in the active editor, or undefined when none is shown: `inline` is the part
   * shown after the cursor on its line (Monaco's `.ghost-text-decoration` spans, one per
   * syntax token), `below` the lines shown under it (`.ghost-text` view zone), if any.
   */
  async ghostText() {
    return this.page.evaluate(() => {
      const editor = document.querySelector('.editor-group-container.active .monaco-editor');
      if (!editor) {
        return undefined;
      }
      const visible = (el) => !el.closest('.ghost-text-hidden');
      const spans = [...editor.querySelectorAll('.view-lines .ghost-text-decoration, .view-lines .ghost-text-decoration-preview')].filter(visible);
      const zones = [...editor.querySelectorAll('.ghost-text')].filter(visible);
      if (spans.length === 0 && zones.length === 0) {
        return undefined;
      }
      const clean = (text) => text.replace(/\u00a0/g, ' ');
      const lines = new Map();
      for (const span of spans) {
        const line = span.closest('.view-line');
        lines.set(line, (lines.get(line) ?? '') + clean(span.textContent));
      }
      const below = zones.flatMap((zone) => {
        const rows = [...zone.querySelectorAll('.view-line')];
        return rows.length > 0 ? rows.map((row) => clean(row.textContent)) : [clean(zone.textContent)];
      });
      return {
        inline: [...lines.values()].join('\n'),
        below,
        classes: [...new Set([...spans, ...zones].map((el) => el.className))],
      };
    });
  }

  /**
   * "lsp-infer: Show Stats": waits for its stats view (a webview; its page is searched for in
   * every frame) and for the lspInfer/stats block it logs to the output channel; returns both,
   * the block as {key: value} with numbers where the value is one.
   */
  async serverStats(label) {
    const channelBlocks = () => {
      const file = fs.existsSync(path.join(this.userData, 'logs')) ? this.channelLogFile() : undefined;
      return file ? fs.readFileSync(file, 'utf8').split(/^.*\[info\] lsp-infer stats \(/m).slice(1) : [];
    };
    const before = channelBlocks().length;
    await this.runCommand('lsp-infer: Show Stats');
    const view = await waitFor('the stats view (a webview with the latency chart)', T_UI, async () => {
      for (const frame of this.page.frames()) {
        const found = await frame
          .evaluate(() => {
            const chart = document.querySelector('svg.chart, p.empty');
            return chart
              ? {
                  chart: document.querySelector('svg.chart') !== null,
                  bars: document.querySelectorAll('svg.bars').length,
                  figures: [...document.querySelectorAll('table.figures tr')].map((row) => row.textContent),
                  definitions: [...document.querySelectorAll('table.definitions tr')].map((row) => row.textContent),
                  nextEdit: [...document.querySelectorAll('table.next-edit tr, table.next-edit-kinds tr')].map((row) => row.textContent),
                }
              : undefined;
          })
          .catch(() => undefined);
        if (found) {
          return found;
        }
      }
      return undefined;
    });
    await sleep(500); // let the webview paint
    await this.screenshot(label);
    const block = await waitFor('the stats in the output channel log', T_UI, () => {
      const blocks = channelBlocks();
      return blocks.length > before ? blocks[blocks.length - 1] : undefined;
    });
    const stats = {};
    for (const line of block.split('\n').slice(1)) {
      const match = /^ {2}(\S+)\s{2,}(.*)$/.exec(line);
      if (!match) {
        break;
      }
      stats[match[1]] = /^-?\d+(\.\d+)?$/.test(match[2]) ? Number(match[2]) : match[2];
    }
    return { view, stats };
  }

  /** The text of the active editor's line with the cursor (Monaco's current line). */
  async cursorLine() {
    return this.page.evaluate(() => {
      const editor = document.querySelector('.editor-group-container.active .monaco-editor');
      const current = editor?.querySelector('.view-overlays .current-line');
      if (!current) {
        return undefined;
      }
      const top = current.parentElement.style.top;
      const line = [...editor.querySelectorAll('.view-lines .view-line')].find((el) => el.style.top === top);
      if (!line) {
        return undefined;
      }
      // Ghost text is drawn inside the line: leave it out.
      const clone = line.cloneNode(true);
      clone.querySelectorAll('.ghost-text-decoration, .ghost-text-decoration-preview, .ghost-text').forEach((el) => el.remove());
      return clone.textContent.replace(/\u00a0/g, ' ');
    });
  }

  /**
   * The active editor's lines on screen, top to bottom, as Monaco draws them (a decoration's
   * `after` text is CSS content, not in the text), each with what a next edit draws on it: the
   * struck-through text (computed text-decoration line-through) with its color, and the ghost
   * texts (the `::after` content of the line's spans). For a file that fits the screen,
   * scrolled to the top, the index is the line number.
   */
  async editorLines() {
    return this.page.evaluate(() => {
      const editor = document.querySelector('.editor-group-container.active .monaco-editor');
      if (!editor) {
        return undefined;
      }
      return [...editor.querySelectorAll('.view-lines .view-line')]
        .map((line) => ({ line, top: parseFloat(line.style.top || '0') }))
        .sort((a, b) => a.top - b.top)
        .map(({ line }) => {
          const struck = [];
          const ghost = [];
          for (const span of line.querySelectorAll('span')) {
            const style = getComputedStyle(span);
            if (span.children.length === 0 && style.textDecorationLine.includes('line-through') && span.textContent !== '') {
              struck.push({ text: span.textContent.replace(/\u00a0/g, ' '), color: style.color });
            }
            const after = getComputedStyle(span, '::after').content;
            if (after && after !== 'none' && after !== 'normal' && after !== '""') {
              ghost.push({ text: after.replace(/^["']|["']$/g, ''), color: getComputedStyle(span, '::after').color });
            }
          }
          return { text: line.textContent.replace(/\u00a0/g, ' '), struck, ghost };
        });
    });
  }

  /** The page position of the first `word` on the editor's `index`th line on screen (its middle). */
  async wordAt(index, word) {
    return this.page.evaluate(
      (index, word) => {
        const editor = document.querySelector('.editor-group-container.active .monaco-editor');
        const lines = [...editor.querySelectorAll('.view-lines .view-line')].sort((a, b) => parseFloat(a.style.top || '0') - parseFloat(b.style.top || '0'));
        const line = lines[index];
        if (!line) {
          return undefined;
        }
        const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const at = node.textContent.indexOf(word);
          if (at >= 0) {
            const range = document.createRange();
            range.setStart(node, at);
            range.setEnd(node, at + word.length);
            const box = range.getBoundingClientRect();
            return { x: box.left + box.width / 2, y: box.top + box.height / 2 };
          }
        }
        return undefined;
      },
      index,
      word,
    );
  }

  /** The visible lines of the output panel's editor, and the channel it shows. */
  async outputView() {
    return this.page.evaluate(() => {
      const panel = document.querySelector('.part.panel');
      if (!panel) {
        return undefined;
      }
      const view = panel.querySelector('.output-view, .monaco-editor');
      if (!view) {
        return undefined;
      }
      const lines = [...panel.querySelectorAll('.monaco-editor .view-line')]
        .map((line) => ({ top: parseFloat(line.style.top || '0'), text: line.textContent }))
        .sort((a, b) => a.top - b.top)
        .map((line) => line.text.replace(/\u00a0/g, ' '));
      const select = panel.querySelector('select.monaco-select-box');
      const channel = select ? select.options[select.selectedIndex]?.text : undefined;
      const selectTitle = [...panel.querySelectorAll('.monaco-select-box')].map((el) => el.getAttribute('title') || el.textContent).join(' ');
      return { channel: channel ?? selectTitle, lines };
    });
  }

  /** The extension's output channel log file, written by VS Code under the user data dir. */
  channelLogFile() {
    const found = [];
    const walk = (dir) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          walk(full);
        } else if (/lsp-infer\.log$/.test(entry.name)) {
          found.push(full);
        }
      }
    };
    walk(path.join(this.userData, 'logs'));
    return found[0];
  }

  async collectLogs() {
    const file = fs.existsSync(path.join(this.userData, 'logs')) ? this.channelLogFile() : undefined;
    if (file) {
      fs.copyFileSync(file, path.join(RESULTS, `${this.name}-output-channel.log`));
    }
    return file;
  }

  /** The lsp-infer output channel's log, kept with the results; a failed check if there is none. */
  async channelLog() {
    const file = await this.collectLogs();
    check(file !== undefined, `no lsp-infer output channel log under ${this.userData}/logs`);
    return fs.readFileSync(file, 'utf8');
  }

  /** After a failed check: a screenshot, the logs, and the output channel's last lines. */
  async failed() {
    if (this.page) {
      await this.screenshot('FAILED');
    }
    const file = await this.collectLogs().catch(() => undefined);
    if (file) {
      const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-15);
      log(`${this.name}: the lsp-infer output channel's last lines:\n    ${lines.join('\n    ')}`);
    } else {
      log(`${this.name}: no lsp-infer output channel log (did the extension activate?)`);
    }
  }

  async stop() {
    await this.browser?.close().catch(() => undefined);
    if (this.process && this.process.exitCode === null && this.process.signalCode === null) {
      try {
        process.kill(-this.process.pid, 'SIGTERM'); // its group: the extension host and lsp-infer serve too
      } catch {
        /* gone */
      }
      const done = await Promise.race([this.exited, sleep(10 * SECONDS).then(() => undefined)]);
      if (done === undefined) {
        try {
          process.kill(-this.process.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    if (this.logFd !== undefined) {
      fs.closeSync(this.logFd);
    }
    if (!process.env.LSP_INFER_E2E_KEEP) {
      fs.rmSync(this.root, { recursive: true, force: true });
    }
  }
}

function baseSettings(extra) {
  return {
    // No telemetry, update checks, welcome pages, tips, trust prompts or AI features.
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'extensions.ignoreRecommendations': true,
    'workbench.startupEditor': 'none',
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'security.workspace.trust.enabled': false,
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'git.enabled': false,
    // Only inline suggestions: no suggest widget to take the Tab key.
    'editor.inlineSuggest.enabled': true,
    'editor.quickSuggestions': { other: 'off', comments: 'off', strings: 'off' },
    'editor.suggestOnTriggerCharacters': false,
    'editor.wordBasedSuggestions': 'off',
    'editor.acceptSuggestionOnEnter': 'off',
    // What is typed is what lands in the file: no indentation or brackets added on the way.
    'editor.autoIndent': 'none',
    'editor.autoClosingBrackets': 'never',
    'files.autoSave': 'off',
    'files.insertFinalNewline': false,
    'files.trimTrailingWhitespace': false,
    ...extra,
  };
}

// -- the scenarios -------------------------------------------------------------------------

async function completionScenario(puppeteer) {
  const vscode = new VSCode('completion', baseSettings({ 'lspInfer.server.command': [SERVER, 'serve'] }));
  current = vscode;
  try {
    await vscode.start(puppeteer);
    const file = path.join(vscode.workspace, 'arith.py');
    fs.writeFileSync(file, FILE_TEXT);

    const first = await waitFor('the lsp-infer status bar item', T_WORKBENCH, () => vscode.statusItem());
    log(`completion: status item ${JSON.stringify(first)}`);
    const ready = await waitFor('the status bar item to show ready (sparkle icon: the model is loaded)', T_MODEL_READY, async () => {
      const item = await vscode.statusItem();
      if (item && item.icons.includes('codicon-error')) {
        throw new CheckFailed(`the status bar item shows an error: ${JSON.stringify(item)}`);
      }
      if (item && item.icons.includes('codicon-sparkle') && !/Ready: /.test(item.ariaLabel)) {
        // The ready icon before the server said its model is ready (the label holds the tooltip).
        throw new CheckFailed(`the status bar item shows ready before the model is: ${JSON.stringify(item)}`);
      }
      return item && item.icons.includes('codicon-sparkle') ? item : undefined;
    }, 500).catch(async (error) => {
      if (/shows an error|shows ready before/.test(error.message)) {
        throw error;
      }
      throw new CheckFailed(`${error.message}; last status item: ${JSON.stringify(await vscode.statusItem())}`);
    });
    log(`completion: status item ready: ${JSON.stringify(ready)}`);
    check(ready.text.includes('lsp-infer'), `the ready status item's text does not name lsp-infer: ${JSON.stringify(ready.text)}`);
    check(!ready.hasBackground, `the ready status item has a (warning/error) background: ${JSON.stringify(ready)}`);
    const tooltip = await vscode.statusTooltip();
    log(`completion: status tooltip: ${JSON.stringify(tooltip)}`);
    check(/lsp-infer — Ready: /.test(tooltip), `the status tooltip does not say the model is ready: ${JSON.stringify(tooltip)}`);
    await vscode.screenshot('ready');

    await vscode.openFile('arith.py');
    log('completion: arith.py is open');
    // Click into the text, then go to the end of the file (the empty line under `def add`).
    await vscode.page.click('.editor-group-container.active .monaco-editor .view-lines');
    await vscode.page.keyboard.down('Control');
    await vscode.page.keyboard.press('End');
    await vscode.page.keyboard.up('Control');
    await vscode.page.keyboard.type(TYPED, { delay: 80 });
    log(`completion: typed ${JSON.stringify(TYPED)}; waiting for ghost text`);

    let ghost;
    try {
      ghost = await waitFor('ghost text (.ghost-text / .ghost-text-decoration) in the editor', T_GHOST_TEXT, () => vscode.ghostText(), 200);
    } catch (error) {
      throw new CheckFailed(`${error.message}; status item: ${JSON.stringify(await vscode.statusItem())}`);
    }
    await sleep(500); // let a multi-line suggestion finish rendering
    ghost = (await vscode.ghostText()) ?? ghost;
    log(`completion: ghost text shown: ${JSON.stringify(ghost)}`);
    await vscode.screenshot('ghost-text');
    check(ghost.inline.trim() !== '', `no ghost text after the cursor (or it holds no text): ${JSON.stringify(ghost)}`);

    await vscode.page.keyboard.press('Tab');
    await waitFor('the ghost text to go away after Tab', T_UI, async () => (await vscode.ghostText()) === undefined);
    await vscode.page.keyboard.down('Control');
    await vscode.page.keyboard.press('KeyS');
    await vscode.page.keyboard.up('Control');
    const prefix = FILE_TEXT + TYPED;
    const saved = await waitFor(`${file} to be saved with more than was typed`, T_UI, () => {
      const text = fs.readFileSync(file, 'utf8');
      return text !== FILE_TEXT && text.length > prefix.length ? text : undefined;
    }).catch((error) => {
      throw new CheckFailed(`${error.message}; on disk: ${JSON.stringify(fs.readFileSync(file, 'utf8'))}`);
    });
    fs.writeFileSync(path.join(RESULTS, 'completion-arith.py'), saved);
    log(`completion: saved file: ${JSON.stringify(saved)}`);
    check(saved.startsWith(prefix), `the saved file does not start with the original text and what was typed: ${JSON.stringify(saved)}`);
    // What Tab inserted is what was shown: the ghost text after the cursor, then the lines below.
    const inserted = saved.slice(prefix.length);
    const shown = [ghost.inline, ...ghost.below].join('\n');
    check(
      inserted.startsWith(ghost.inline),
      `the accepted text ${JSON.stringify(inserted)} does not start with the ghost text shown after the cursor ${JSON.stringify(ghost.inline)}`,
    );
    check(
      inserted.trimEnd() === shown.trimEnd(),
      `the accepted text ${JSON.stringify(inserted)} is not the ghost text shown ${JSON.stringify(shown)}`,
    );
    await vscode.screenshot('accepted');

    // The status bar now shows the latency of the suggestion it showed.
    const after = await waitFor('the status bar item to show a latency after the suggestion', T_UI, async () => {
      const item = await vscode.statusItem();
      return item && /lsp-infer \d+(\.\d)? (ms|s)/.test(item.text) ? item : undefined;
    }).catch(async (error) => {
      throw new CheckFailed(`${error.message}; status item: ${JSON.stringify(await vscode.statusItem())}`);
    });
    log(`completion: status item after the suggestion: ${JSON.stringify(after)}`);


    // The output channel, through the extension's own command.
    await vscode.runCommand('lsp-infer: Show Output');
    const output = await waitFor('the lsp-infer output channel in the panel, with the model ready line', T_UI, async () => {
      const view = await vscode.outputView();
      return view && view.lines.some((line) => /Model ready: /.test(line)) ? view : undefined;
    }).catch(async (error) => {
      throw new CheckFailed(`${error.message}; output view: ${JSON.stringify(await vscode.outputView())}`);
    });
    log(`completion: output panel (${output.channel}): ${output.lines.length} visible lines`);
    check(/lsp-infer/.test(output.channel ?? ''), `the output panel does not show the lsp-infer channel: ${JSON.stringify(output.channel)}`);
    await vscode.screenshot('output');
    const channel = await vscode.channelLog();
    check(channel.includes(`Starting the server: ${SERVER} serve`), `the output channel does not log the server command: ${channel.slice(0, 2000)}`);
    check(/Model ready: /.test(channel), 'the output channel does not log the model as ready');
    check(/Settings sent to the server: /.test(channel), 'the output channel does not log the settings sent');
    checkNoErrors(channel);

    // The suggestion lifecycle, counted by the server: what VS Code showed, and the Tab.
    const afterTab = await vscode.serverStats('stats-after-tab');
    log(`completion: stats view: ${JSON.stringify(afterTab.view)}`);
    const counted = Object.fromEntries(Object.entries(afterTab.stats).filter(([key]) => key.startsWith('suggestions.') && !key.includes('.by')));
    log(`completion: lspInfer/stats suggestions after Tab: ${JSON.stringify(counted)}; warms ${afterTab.stats.warms}`);
    check(afterTab.view.chart && afterTab.view.bars >= 1, `the stats view has no latency chart or acceptance bars: ${JSON.stringify(afterTab.view)}`);
    check(afterTab.stats['suggestions.accepted'] === 1, `the server does not count exactly one accepted suggestion: ${JSON.stringify(counted)}`);
    check(afterTab.stats['suggestions.shown'] >= 1, `the server counts no shown suggestion: ${JSON.stringify(counted)}`);
    check(afterTab.stats['suggestions.shownToAcceptedMs.count'] === 1, `no shown→accepted time for the accepted suggestion: ${JSON.stringify(counted)}`);
    check(
      afterTab.stats['suggestions.charactersAccepted'] >= [...inserted.trimEnd()].length,
      `characters accepted (${afterTab.stats['suggestions.charactersAccepted']}) is less than what Tab inserted (${JSON.stringify(inserted)})`,
    );
    check(afterTab.stats['latencyByMinute.bucketSeconds'] === 60, 'lspInfer/stats has no latency per minute');
    // Opening the file put the cursor in it: the extension sent lspInfer/warm, and the server
    // evaluated that place's prompt (once the model was loaded).
    check(afterTab.stats.warms >= 1, `the server counts no warm (lspInfer/warm) after the file was opened: ${afterTab.stats.warms}`);

    // A partial accept: Ctrl+Right (Accept Next Word, through the extension's command).
    await vscode.openFile('arith.py');
    await vscode.page.click('.editor-group-container.active .monaco-editor .view-lines');
    await vscode.page.keyboard.down('Control');
    await vscode.page.keyboard.press('End');
    await vscode.page.keyboard.up('Control');
    const SUB = '\n\ndef sub(a, b):\n    return ';
    await vscode.page.keyboard.type(SUB, { delay: 80 });
    const subGhost = await waitFor('ghost text under `def sub(a, b):`', T_GHOST_TEXT, async () => {
      const line = await vscode.cursorLine();
      const shown = await vscode.ghostText();
      return line === '    return ' && shown && shown.inline.trim() !== '' ? shown : undefined;
    }, 200).catch(async (error) => {
      throw new CheckFailed(`${error.message}; cursor line ${JSON.stringify(await vscode.cursorLine())}, ghost ${JSON.stringify(await vscode.ghostText())}`);
    });
    await sleep(500);
    const wordGhost = (await vscode.ghostText()) ?? subGhost;
    log(`completion: ghost text under sub: ${JSON.stringify(wordGhost)}`);
    await vscode.page.keyboard.down('Control');
    await vscode.page.keyboard.press('ArrowRight');
    await vscode.page.keyboard.up('Control');
    const partial = await waitFor('Ctrl+Right to accept a word of the ghost text', T_UI, async () => {
      const line = await vscode.cursorLine();
      return line !== undefined && line !== '    return ' ? line : undefined;
    });
    log(`completion: the line after Ctrl+Right: ${JSON.stringify(partial)}`);
    await vscode.screenshot('next-word');
    const whole = '    return ' + wordGhost.inline;
    check(whole.startsWith(partial) && partial.length > '    return '.length, `Ctrl+Right did not insert the start of the ghost text ${JSON.stringify(wordGhost.inline)}: the line is ${JSON.stringify(partial)}`);
    await vscode.page.keyboard.press('Escape');
    const afterWord = await vscode.serverStats('stats-after-word');
    const countedWord = Object.fromEntries(Object.entries(afterWord.stats).filter(([key]) => key.startsWith('suggestions.') && !key.includes('.by')));
    log(`completion: lspInfer/stats suggestions after Ctrl+Right: ${JSON.stringify(countedWord)}`);
    if (partial === whole.trimEnd() && wordGhost.below.length === 0) {
      // The word was all of it: VS Code accepts the item whole and runs its command.
      check(afterWord.stats['suggestions.accepted'] === 2, `the whole suggestion taken with Ctrl+Right is not counted as accepted: ${JSON.stringify(countedWord)}`);
    } else {
      check(afterWord.stats['suggestions.partlyAccepted'] >= 1, `the server counts no partly accepted suggestion after Ctrl+Right: ${JSON.stringify(countedWord)}`);
      check(afterWord.stats['suggestions.accepted'] === 1, `Ctrl+Right counted as a whole accept: ${JSON.stringify(countedWord)}`);
    }
    check(afterWord.stats['suggestions.charactersAccepted'] > afterTab.stats['suggestions.charactersAccepted'], 'the word accepted added no characters accepted');
    log('completion: PASS');
  } catch (error) {
    await vscode.failed();
    throw error;
  } finally {
    await vscode.stop();
  }
}

const GEOMETRY_TS = `export interface Point {
  x: number;
  y: number;
}

/**
 * The Euclidean distance between two points.
 */
export function distance(a: Point, b: Point): number {
  return Math.hypot(a.x - b.x, a.y - b.y);
}
`;

const MAIN_TS = `import { distance, Point } from './geometry';

const origin: Point = { x: 0, y: 0 };

export function farthest(points: Point[]): number {
  let best = 0;
  for (const p of points) {
    best = Math.max(best, distance(origin, p));
  }
  return best;
}
`;

/** Typed at the end of main.ts: a call of distance (defined in geometry.ts, never opened). */
const MAIN_TYPED = '\nexport function total(points: Point[]): number {\n  return points.reduce((sum, p) => sum + distance(origin, p), 0);\n';

/** The output channel's log has no error line. */
function checkNoErrors(channel) {
  check(!/\[error\]/.test(channel), `the output channel has errors:\n${channel.split('\n').filter((l) => /\[error\]/.test(l)).join('\n')}`);
}

/** Waits until the status bar item says the model is loaded (an error icon fails at once). */
async function modelReady(vscode) {
  await waitFor('the status bar item to show ready (the model is loaded)', T_MODEL_READY, async () => {
    const item = await vscode.statusItem();
    if (item && item.icons.includes('codicon-error')) {
      throw new CheckFailed(`the status bar item shows an error: ${JSON.stringify(item)}`);
    }
    return item && item.icons.includes('codicon-sparkle') && /Ready: /.test(item.ariaLabel) ? item : undefined;
  }, 500);
}

async function definitionsScenario(puppeteer) {
  const vscode = new VSCode('definitions', baseSettings({ 'lspInfer.server.command': [SERVER, 'serve'] }));
  current = vscode;
  try {
    await vscode.start(puppeteer);
    fs.writeFileSync(path.join(vscode.workspace, 'geometry.ts'), GEOMETRY_TS);
    fs.writeFileSync(path.join(vscode.workspace, 'main.ts'), MAIN_TS);
    fs.writeFileSync(path.join(vscode.workspace, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, target: 'ES2022' } }, null, 2));
    const typescript = path.join(CODE_SERVER, '..', '..', '..', 'lib', 'vscode', 'extensions', 'typescript-language-features', 'package.json');
    check(fs.existsSync(typescript), `VS Code's built-in TypeScript support is not in code-server: no ${typescript}`);

    await modelReady(vscode);
    log('definitions: the model is ready');

    await vscode.openFile('main.ts');
    await vscode.page.click('.editor-group-container.active .monaco-editor .view-lines');
    // TypeScript is up and resolves the import: its hover over `distance` on the first line
    // (Ctrl+K Ctrl+I), asked again until it comes (tsserver loads the project first).
    const hover = await waitFor("TypeScript's hover over `distance` in main.ts (tsserver resolving the import)", T_MODEL_READY, async () => {
      await vscode.page.keyboard.down('Control');
      await vscode.page.keyboard.press('Home');
      await vscode.page.keyboard.up('Control');
      for (let i = 0; i < 12; i++) {
        await vscode.page.keyboard.press('ArrowRight'); // import { dis|tance
      }
      await vscode.page.keyboard.down('Control');
      await vscode.page.keyboard.press('KeyK');
      await vscode.page.keyboard.press('KeyI');
      await vscode.page.keyboard.up('Control');
      const text = await waitFor('a hover', 5 * SECONDS, () =>
        vscode.page.evaluate(() => {
          const shown = [...document.querySelectorAll('.monaco-hover')].map((el) => el.textContent).find((t) => /distance/.test(t));
          return shown;
        }),
      ).catch(() => undefined);
      await vscode.page.keyboard.press('Escape');
      return text && /distance\(a: Point, b: Point\): number/.test(text) ? text : undefined;
    }, 3 * SECONDS);
    log(`definitions: TypeScript's hover: ${JSON.stringify(hover)}`);

    // Type a call of distance at the end of main.ts, then pause (context.idleMs): the server
    // asks the editor where the names near the cursor are defined.
    await vscode.page.keyboard.down('Control');
    await vscode.page.keyboard.press('End');
    await vscode.page.keyboard.up('Control');
    await vscode.page.keyboard.type(MAIN_TYPED, { delay: 80 });
    await vscode.page.keyboard.press('Escape'); // whatever ghost text: not taken
    log(`definitions: typed ${JSON.stringify(MAIN_TYPED)}; pausing`);

    let last;
    for (let attempt = 1; ; attempt++) {
      await sleep(5 * SECONDS);
      last = await vscode.serverStats(`stats-definitions-${attempt}`);
      const counted = Object.fromEntries(Object.entries(last.stats).filter(([key]) => key.startsWith('definitions.')));
      log(`definitions: lspInfer/stats definitions (attempt ${attempt}): ${JSON.stringify(counted)}; view: ${JSON.stringify(last.view.definitions)}`);
      check(last.stats['definitions.supported'] !== undefined, `lspInfer/stats has no definitions object (a server without lspInfer/definitions?): ${JSON.stringify(counted)}`);
      if (last.stats['definitions.answered'] >= 1 || attempt >= 6) {
        break;
      }
    }
    const counted = Object.fromEntries(Object.entries(last.stats).filter(([key]) => key.startsWith('definitions.')));
    check(last.stats['definitions.supported'] === 'yes', `the server does not see the extension's lspInfer/definitions capability: ${JSON.stringify(counted)}`);
    check(last.stats['definitions.requests'] >= 1, `the server sent no lspInfer/definitions request: ${JSON.stringify(counted)}`);
    check(last.stats['definitions.answered'] >= 1, `no definition was answered: ${JSON.stringify(counted)}`);
    check(last.view.definitions.length >= 1, `the stats view has no definitions table: ${JSON.stringify(last.view)}`);
    const tabs = await vscode.page.evaluate(() => [...document.querySelectorAll('.tabs-container .tab')].map((tab) => tab.textContent.trim()));
    log(`definitions: editor tabs: ${JSON.stringify(tabs)}`);
    check(!tabs.some((tab) => tab.includes('geometry.ts')), `geometry.ts was opened in an editor: ${JSON.stringify(tabs)}`);
    const channel = await vscode.channelLog();
    checkNoErrors(channel);
    log('definitions: PASS');
  } catch (error) {
    await vscode.failed();
    throw error;
  } finally {
    await vscode.stop();
  }
}

/** The first lines of a stdlib module, as the server's own cold-start test uses (never seen by the model's caches). */
function stdlibLines(module, count) {
  const python = path.join(path.dirname(SERVER), 'python');
  const found = spawnSync(python, ['-c', `import ${module}; print(${module}.__file__)`], { encoding: 'utf8' });
  check(found.status === 0, `${python} could not find the stdlib's ${module}: ${found.stderr}`);
  return fs.readFileSync(found.stdout.trim(), 'utf8').split('\n').slice(0, count).join('\n');
}

async function coldStartScenario(puppeteer) {
  const vscode = new VSCode(
    'cold-start',
    baseSettings({
      'lspInfer.server.command': [SERVER, 'serve'],
      // A cold start's suggestion is always hidden (no first line is that sure); the whole
      // window's is always shown.
      'lspInfer.completion.coldStartMs': 300,
      'lspInfer.completion.coldStartConfidence': 1.0,
      'lspInfer.completion.minConfidence': 0,
      // Nothing evaluated before the keystroke (opening the file and moving the cursor would
      // warm the place), and nothing but the whole window after it.
      'lspInfer.completion.warm': false,
      'lspInfer.completion.precompute': false,
      'lspInfer.context.enabled': false,
    }),
  );
  current = vscode;
  try {
    await vscode.start(puppeteer);
    // 160 lines once Enter adds the last, empty one (the server's test_cold_start.py text).
    fs.writeFileSync(path.join(vscode.workspace, 'cold.py'), stdlibLines('difflib', 160));
    await modelReady(vscode);
    log('cold-start: the model is ready');

    await vscode.openFile('cold.py');
    await vscode.page.click('.editor-group-container.active .monaco-editor .view-lines');
    await vscode.page.keyboard.down('Control');
    await vscode.page.keyboard.press('End');
    await vscode.page.keyboard.up('Control');
    await vscode.page.keyboard.press('Enter');
    const typedAt = Date.now();
    log('cold-start: Enter at the end of cold.py; no further keystroke, waiting for ghost text');
    const ghost = await waitFor('ghost text without another keystroke (the whole window\'s suggestion, offered again)', T_COLD_GHOST, async () => {
      const shown = await vscode.ghostText();
      return shown && (shown.inline.trim() !== '' || shown.below.some((line) => line.trim() !== '')) ? shown : undefined;
    }, 200).catch(async (error) => {
      throw new CheckFailed(`${error.message}; cursor line ${JSON.stringify(await vscode.cursorLine())}, status item ${JSON.stringify(await vscode.statusItem())}`);
    });
    log(`cold-start: ghost text ${((Date.now() - typedAt) / 1000).toFixed(1)} s after Enter: ${JSON.stringify(ghost)}`);
    await vscode.screenshot('ghost-text');
    const line = await vscode.cursorLine();
    check(line === '', `the cursor's line is not the empty line Enter made: ${JSON.stringify(line)}`);

    const { stats } = await vscode.serverStats('stats');
    const keys = ['requests', 'generations', 'reducedWindows', 'hidden', 'offeredAgain', 'cacheHits', 'suggestions.shown'];
    const counted = Object.fromEntries(keys.map((key) => [key, stats[key]]));
    log(`cold-start: lspInfer/stats ${JSON.stringify(counted)}`);
    check(stats.reducedWindows >= 1, `no cold start (reducedWindows): ${JSON.stringify(counted)}`);
    check(stats.hidden >= 1, `the cold start's suggestion was not hidden: ${JSON.stringify(counted)}`);
    check(stats.offeredAgain >= 1, `the server sent no lspInfer/suggestionReady (offeredAgain): ${JSON.stringify(counted)}`);
    check(stats.cacheHits >= 1, `the request asked again was not answered from the cache (sent as Invoked?): ${JSON.stringify(counted)}`);
    check(stats['suggestions.shown'] >= 1, `the server counts no shown suggestion: ${JSON.stringify(counted)}`);
    const channel = await vscode.channelLog();
    checkNoErrors(channel);
    log('cold-start: PASS');
  } catch (error) {
    await vscode.failed();
    throw error;
  } finally {
    await vscode.stop();
  }
}

const AREA_PY = 'def area(wdth, height):\n    return wdth * height\n\n\ndef double(wdth):\n    return wdth * 2\n';
/** The same function with 80 comment lines between the def line and the use (line 82). */
const FAR_PY = ['def area(wdth, height):', ...Array.from({ length: 80 }, (_, i) => `    # step ${i + 1}`), '    return wdth * height', ''].join('\n');

async function nextEditScenario(puppeteer) {
  const vscode = new VSCode(
    'next-edit',
    baseSettings({
      'lspInfer.server.command': [SERVER, 'serve'],
      // No inline suggestions: Tab here is the next edit's, not a completion's that the model
      // may offer at the cursor after the rename (the keybinding's `when` leaves Tab to it).
      'editor.inlineSuggest.enabled': false,
    }),
  );
  current = vscode;
  /** Lines with a next edit drawn on them: [index, text, struck, ghost]. */
  const decorated = (lines) => (lines ?? []).map((l, i) => ({ i, ...l })).filter((l) => l.struck.length > 0 || l.ghost.length > 0);
  /** Double-click `word` on line `index` (0-based) and type `typed` over it, as a user does. */
  async function renameAt(index, word, typed) {
    const at = await waitFor(`\`${word}\` on line ${index + 1}`, T_UI, () => vscode.wordAt(index, word));
    await vscode.page.mouse.click(at.x, at.y, { count: 2 });
    await waitFor(`\`${word}\` selected by the double-click`, T_UI, () =>
      vscode.page.evaluate(() => document.querySelector('.editor-group-container.active .monaco-editor .view-overlays .selected-text') !== null),
    );
    await vscode.page.keyboard.type(typed, { delay: 80 });
  }
  /** Waits for the next edit drawn on line `index`: `removed` struck through, `inserted` as ghost text. */
  async function shownOn(index, removed, inserted) {
    return waitFor(`the next edit on line ${index + 1} (${removed} struck through, ${inserted} as ghost text)`, T_NEXT_EDIT, async () => {
      const lines = await vscode.editorLines();
      const line = lines?.[index];
      return line && line.struck.some((s) => s.text === removed) && line.ghost.some((g) => g.text === inserted) ? lines : undefined;
    }, 200).catch(async (error) => {
      throw new CheckFailed(`${error.message}; lines: ${JSON.stringify(await vscode.editorLines())}`);
    });
  }
  const lineTexts = async () => ((await vscode.editorLines()) ?? []).map((l) => l.text);
  try {
    await vscode.start(puppeteer);
    const file = path.join(vscode.workspace, 'area.py');
    fs.writeFileSync(file, AREA_PY);
    fs.writeFileSync(path.join(vscode.workspace, 'far.py'), FAR_PY);
    await modelReady(vscode);
    log('next-edit: the model is ready');
    await vscode.openFile('area.py');

    // The user renames the parameter on the def line: double-click `wdth`, type `width`.
    await renameAt(0, 'wdth', 'width');
    const renamed = await waitFor('line 1 to read `def area(width, height):`', T_UI, async () => ((await lineTexts())[0] === 'def area(width, height):' ? true : undefined)).catch(async (error) => {
      throw new CheckFailed(`${error.message}; lines: ${JSON.stringify(await lineTexts())}`);
    });
    log(`next-edit: renamed on line 1 (${renamed}); pausing`);
    const shown = await shownOn(1, 'wdth', 'width');
    log(`next-edit: drawn: ${JSON.stringify(decorated(shown))}`);
    await sleep(300); // let the decorations paint
    await vscode.screenshot('next-edit-shown');
    check(
      decorated(shown).every((l) => l.i === 1),
      `the next edit is drawn on other lines than line 2 (double's own wdth must not be touched): ${JSON.stringify(decorated(shown))}`,
    );
    const struck = shown[1].struck.find((s) => s.text === 'wdth');
    check(/^rgb\((\d+), (\d+), (\d+)/.test(struck.color) && Number(/^rgb\((\d+)/.exec(struck.color)[1]) > 150, `the removed text is not drawn in red: ${struck.color}`);

    // Tab: goes to line 2 (the cursor is on line 1), then applies.
    await vscode.page.keyboard.press('Tab');
    const afterFirst = await waitFor('the first Tab to go to line 2 or apply the rename', T_UI, async () => {
      const texts = await lineTexts();
      const cursor = await vscode.cursorLine();
      if (texts[0] !== 'def area(width, height):') {
        throw new CheckFailed(`Tab changed line 1 (not the next edit's key?): ${JSON.stringify(texts)}`);
      }
      if (texts[1] === '    return width * height') {
        return 'applied';
      }
      return cursor === '    return wdth * height' ? 'jumped' : undefined;
    });
    log(`next-edit: the first Tab ${afterFirst}`);
    if (afterFirst === 'jumped') {
      await vscode.screenshot('next-edit-jumped');
      check(decorated(await vscode.editorLines()).length > 0, 'the next edit went away when Tab went to it');
      await vscode.page.keyboard.press('Tab');
    }
    await waitFor('line 2 to read `    return width * height`, and the drawing gone', T_UI, async () => {
      const lines = await vscode.editorLines();
      return lines?.[1]?.text === '    return width * height' && decorated(lines).length === 0 ? lines : undefined;
    }).catch(async (error) => {
      throw new CheckFailed(`${error.message}; lines: ${JSON.stringify(await vscode.editorLines())}`);
    });
    await vscode.screenshot('next-edit-applied');
    await vscode.page.keyboard.down('Control');
    await vscode.page.keyboard.press('KeyS');
    await vscode.page.keyboard.up('Control');
    // Only area's body: double has a `wdth` of its own (another scope), left as it was.
    const expected = 'def area(width, height):\n    return width * height\n\n\ndef double(wdth):\n    return wdth * 2\n';
    const saved = await waitFor(`${file} saved with the rename applied`, T_UI, () => {
      const text = fs.readFileSync(file, 'utf8');
      return text !== AREA_PY ? text : undefined;
    });
    fs.writeFileSync(path.join(RESULTS, 'next-edit-area.py'), saved);
    check(saved === expected, `the saved file is not the rename carried to line 2 alone: ${JSON.stringify(saved)}`);

    // A second rename, in double, dismissed with Escape.
    await renameAt(4, 'wdth', 'count');
    await waitFor('line 5 to read `def double(count):`', T_UI, async () => ((await lineTexts())[4] === 'def double(count):' ? true : undefined));
    const second = await shownOn(5, 'wdth', 'count');
    log(`next-edit: drawn: ${JSON.stringify(decorated(second))}`);
    await sleep(300);
    await vscode.screenshot('next-edit-second');
    await vscode.page.keyboard.press('Escape');
    const dismissed = await waitFor('Escape to take the next edit away', T_UI, async () => {
      const lines = await vscode.editorLines();
      return lines && decorated(lines).length === 0 ? lines : undefined;
    });
    await vscode.screenshot('next-edit-dismissed');
    check(dismissed[5].text === '    return wdth * 2', `Escape changed line 6: ${JSON.stringify(dismissed.map((l) => l.text))}`);
    check(dismissed[4].text === 'def double(count):' && dismissed[1].text === '    return width * height', `the lines changed: ${JSON.stringify(dismissed.map((l) => l.text))}`);

    // Off screen: in far.py the use is 80 lines below the def line. A hint at the end of the
    // cursor's line says where; Tab scrolls there, Tab again applies.
    await vscode.openFile('far.py');
    await renameAt(0, 'wdth', 'width');
    const hinted = await waitFor('the hint at the cursor\'s line (the next edit is off screen)', T_NEXT_EDIT, async () => {
      const lines = await vscode.editorLines();
      return lines?.[0]?.ghost.some((g) => /line 82, Tab to go/.test(g.text)) ? lines : undefined;
    }, 200).catch(async (error) => {
      throw new CheckFailed(`${error.message}; lines: ${JSON.stringify(decorated(await vscode.editorLines()))}`);
    });
    log(`next-edit: hint: ${JSON.stringify(hinted[0].ghost)}`);
    await sleep(300);
    await vscode.screenshot('next-edit-hint');
    await vscode.page.keyboard.press('Tab');
    await waitFor('Tab to scroll to line 82, with the next edit drawn there and the hint gone', T_UI, async () => {
      const lines = await vscode.editorLines();
      const line = lines?.find((l) => l.text === '    return wdth * height');
      const hint = lines?.some((l) => l.ghost.some((g) => /Tab to go/.test(g.text)));
      return (await vscode.cursorLine()) === '    return wdth * height' && line?.struck.some((s) => s.text === 'wdth') && !hint ? lines : undefined;
    }).catch(async (error) => {
      throw new CheckFailed(`${error.message}; cursor line ${JSON.stringify(await vscode.cursorLine())}; lines: ${JSON.stringify(decorated(await vscode.editorLines()))}`);
    });
    await vscode.screenshot('next-edit-far-jumped');
    await vscode.page.keyboard.press('Tab');
    await waitFor('line 82 to read `    return width * height`', T_UI, async () => ((await vscode.cursorLine()) === '    return width * height' ? true : undefined)).catch(async (error) => {
      throw new CheckFailed(`${error.message}; cursor line ${JSON.stringify(await vscode.cursorLine())}`);
    });
    // One undo step: Ctrl+Z takes the applied edit back, and only it (line 1 keeps `width`).
    await vscode.page.keyboard.down('Control');
    await vscode.page.keyboard.press('KeyZ');
    await vscode.page.keyboard.up('Control');
    await waitFor('Ctrl+Z to take the applied edit back (line 82 `    return wdth * height` again)', T_UI, async () =>
      (await vscode.cursorLine()) === '    return wdth * height' ? true : undefined,
    ).catch(async (error) => {
      throw new CheckFailed(`${error.message}; cursor line ${JSON.stringify(await vscode.cursorLine())}`);
    });
    await vscode.page.keyboard.down('Control');
    await vscode.page.keyboard.press('Home');
    await vscode.page.keyboard.up('Control');
    const top = await waitFor('line 1 on screen', T_UI, async () => ((await lineTexts())[0]?.startsWith('def area') ? lineTexts() : undefined));
    check(top[0] === 'def area(width, height):', `one Ctrl+Z took back more than the applied edit: line 1 is ${JSON.stringify(top[0])}`);

    // The server counted it all; the stats view shows it.
    const { view, stats } = await vscode.serverStats('stats-next-edit');
    const counted = Object.fromEntries(Object.entries(stats).filter(([key]) => key.startsWith('nextEdit.')));
    log(`next-edit: lspInfer/stats nextEdit ${JSON.stringify(counted)}; view ${JSON.stringify(view.nextEdit)}`);
    check(stats['nextEdit.requests'] >= 2, `the server counts fewer than two lspInfer/nextEdit requests: ${JSON.stringify(counted)}`);
    check(stats['nextEdit.shown'] >= 2, `the server counts fewer than two shown next edits: ${JSON.stringify(counted)}`);
    check(stats['nextEdit.accepted'] === 2, `the server does not count exactly two accepted next edits: ${JSON.stringify(counted)}`);
    check(stats['nextEdit.rejected'] >= 1, `the server counts no rejected next edit (Escape): ${JSON.stringify(counted)}`);
    check(stats['nextEdit.byKind.rename.accepted'] === 2, `the accepted next edits are not counted as renames: ${JSON.stringify(counted)}`);
    check(view.nextEdit.some((row) => /^Accepted\s*2$/.test(row.trim())), `the stats view has no next-edit table with two accepted: ${JSON.stringify(view.nextEdit)}`);
    const channel = await vscode.channelLog();
    checkNoErrors(channel);
    log('next-edit: PASS');
  } catch (error) {
    await vscode.failed();
    throw error;
  } finally {
    await vscode.stop();
  }
}

async function badCommandScenario(puppeteer) {
  const missing = path.join(os.tmpdir(), 'lsp-infer-e2e-no-such-dir', 'lsp-infer');
  const vscode = new VSCode('bad-command', baseSettings({ 'lspInfer.server.command': [missing, 'serve'] }));
  current = vscode;
  try {
    await vscode.start(puppeteer);
    const error = await waitFor('the status bar item to show its error state', T_WORKBENCH, async () => {
      const item = await vscode.statusItem();
      return item && item.icons.includes('codicon-error') ? item : undefined;
    }).catch(async (err) => {
      throw new CheckFailed(`${err.message}; status item: ${JSON.stringify(await vscode.statusItem())}`);
    });
    log(`bad-command: status item: ${JSON.stringify(error)}`);
    check(error.hasBackground, `the error status item has no error background: ${JSON.stringify(error)}`);

    const expected = `The lsp-infer language server was not found: \`${missing}\` does not exist (lspInfer.server.command).`;
    const notification = await waitFor('an error notification saying the server was not found', T_UI, () =>
      vscode.page.evaluate(() => {
        const toast = [...document.querySelectorAll('.notifications-toasts .notification-toast')].find((el) =>
          /language server was not found/.test(el.textContent),
        );
        if (!toast) {
          return undefined;
        }
        const message = toast.querySelector('.notification-list-item-message')?.textContent ?? toast.textContent;
        const buttons = [...toast.querySelectorAll('.monaco-button')].map((b) => b.textContent.trim()).filter((t) => t !== '');
        const severity = [...toast.querySelectorAll('.notification-list-item-icon')].flatMap((i) => [...i.classList]).join(' ');
        return { message, buttons, severity };
      }),
    );
    log(`bad-command: notification: ${JSON.stringify(notification)}`);
    check(notification.message.includes(`lsp-infer: ${expected}`), `the notification does not say ${JSON.stringify(expected)}: ${JSON.stringify(notification.message)}`);
    check(/codicon-error/.test(notification.severity), `the notification is not an error: ${notification.severity}`);
    check(
      notification.buttons.includes('Open Settings') && notification.buttons.includes('Show Output'),
      `the notification does not offer Open Settings and Show Output: ${JSON.stringify(notification.buttons)}`,
    );
    await sleep(1000); // the toast fades in
    await vscode.screenshot('notification');

    const tooltip = await vscode.statusTooltip();
    log(`bad-command: status tooltip: ${JSON.stringify(tooltip)}`);
    check(tooltip.includes(`lsp-infer — The server is not running: ${expected}`), `the status tooltip does not give the reason: ${JSON.stringify(tooltip)}`);

    // The notification's Show Output button opens the channel, which has the same error.
    const clicked = await vscode.page.evaluate(() => {
      const toast = [...document.querySelectorAll('.notifications-toasts .notification-toast')].find((el) =>
        /language server was not found/.test(el.textContent),
      );
      const button = toast && [...toast.querySelectorAll('.monaco-button')].find((b) => b.textContent.trim() === 'Show Output');
      button?.click();
      return button !== undefined;
    });
    check(clicked, 'the notification has no Show Output button to click (it went away?)');
    const output = await waitFor('the lsp-infer output channel with the error', T_UI, async () => {
      const view = await vscode.outputView();
      return view && view.lines.some((line) => line.includes('language server was not found')) ? view : undefined;
    }).catch(async (err) => {
      throw new CheckFailed(`${err.message}; output view: ${JSON.stringify(await vscode.outputView())}`);
    });
    log(`bad-command: output panel (${output.channel}): ${JSON.stringify(output.lines.filter((l) => l.includes('not found')))}`);
    await vscode.screenshot('output');
    const channel = await vscode.channelLog();
    check(channel.includes(`[error] ${expected}`), `the output channel does not have the error line: ${channel}`);
    check(!channel.includes('Starting the server:'), 'the extension tried to start a server that does not exist');
    log('bad-command: PASS');
  } catch (error) {
    await vscode.failed();
    throw error;
  } finally {
    await vscode.stop();
  }
}

// -- main ----------------------------------------------------------------------------------

let current;

async function main() {
  fs.rmSync(RESULTS, { recursive: true, force: true });
  fs.mkdirSync(RESULTS, { recursive: true });
  preflight();
  const puppeteer = require('puppeteer-core');
  const chromiumVersion = spawnSync(CHROMIUM, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const codeServerVersion = JSON.parse(fs.readFileSync(path.join(path.dirname(CODE_SERVER), '..', '..', 'package.json'), 'utf8')).version;
  log(`node ${process.version}, code-server ${codeServerVersion}, ${chromiumVersion}, puppeteer-core ${require('puppeteer-core/package.json').version}`);
  log(`server: ${SERVER} serve; extension: ${path.relative(REPO, VSIX)}; results: ${path.relative(REPO, RESULTS) || RESULTS}`);
  const only = process.argv.slice(2);
  const scenarios = [
    ['completion', completionScenario],
    ['definitions', definitionsScenario],
    ['cold-start', coldStartScenario],
    ['next-edit', nextEditScenario],
    ['bad-command', badCommandScenario],
  ].filter(([name]) => only.length === 0 || only.includes(name));
  const failures = [];
  for (const [name, run] of scenarios) {
    log(`== ${name}`);
    try {
      await run(puppeteer);
    } catch (error) {
      const reason = error instanceof CheckFailed ? error.message : error.stack;
      log(`FAIL: ${name}: ${reason}`);
      failures.push(name);
    }
  }
  log(`results (screenshots, code-server and output channel logs): ${RESULTS}`);
  if (failures.length > 0) {
    log(`FAILED: ${failures.join(', ')} (of ${scenarios.length} scenarios)`);
    process.exit(1);
  }
  log(`PASSED: ${scenarios.map(([name]) => name).join(', ')}`);
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    await current?.stop().catch(() => undefined);
    process.exit(130);
  });
}

await main();
