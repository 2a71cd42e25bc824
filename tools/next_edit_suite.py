"""Build the next-edit history suite from public repositories' histories.

A case is one commit that changed one Python file in a few small hunks near each other: the
file before the commit and after it. bench/next_edit.py replays the first hunk as the user's
edit and asks what comes next; the commit's other hunks are what a right prediction may do.
The suite is built once (it needs the repositories' histories, which CI cannot fetch) and kept
in bench/data/next-edit-history.jsonl.gz; pallets/click is never used (kept out for an
independent check).

    python tools/next_edit_suite.py --out bench/data/next-edit-history.jsonl.gz \\
        /path/to/encode+httpx/repo /path/to/psf+requests/repo ...

Each argument is a git directory (a bare mirror is enough). Deterministic for the same
histories: commits are taken newest first, at most --per-repo of each.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import json
import subprocess
from pathlib import Path

MAX_FILE_CHARS = 60_000  # larger files make the suite heavy and say nothing more
MAX_HUNK_LINES = 6  # lines removed or added by one hunk: a small edit, as typed
MAX_HUNKS = 6
NEARBY_LINES = 40  # the first two hunks at most this far apart: the next edit is near


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True,
                          text=True, check=True, errors="replace").stdout  # fmt: skip


def single_python_file_commits(repo: Path) -> list[tuple[str, str]]:
    """(commit, path) of the non-merge commits that changed exactly one file, a .py one."""
    found: list[tuple[str, str]] = []
    commit, files = None, []
    for line in git(repo, "log", "--no-merges", "--format=C %H", "--name-only").splitlines():
        if line.startswith("C "):
            if commit and len(files) == 1 and files[0].endswith(".py"):
                found.append((commit, files[0]))
            commit, files = line[2:], []
        elif line.strip():
            files.append(line.strip())
    if commit and len(files) == 1 and files[0].endswith(".py"):
        found.append((commit, files[0]))
    return found


def hunks(before: list[str], after: list[str]) -> list[tuple[int, int, int, int]]:
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in
            difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
            if tag != "equal"]  # fmt: skip


def qualifies(before: str, after: str) -> bool:
    if max(len(before), len(after)) > MAX_FILE_CHARS or before == after:
        return False
    found = hunks(before.splitlines(keepends=True), after.splitlines(keepends=True))
    if not 2 <= len(found) <= MAX_HUNKS:
        return False
    if any(i2 - i1 > MAX_HUNK_LINES or j2 - j1 > MAX_HUNK_LINES for i1, i2, j1, j2 in found):
        return False
    return found[1][0] - found[0][1] <= NEARBY_LINES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-repo", type=int, default=60)
    args = parser.parse_args()
    cases = []
    for repo in args.repos:
        name = repo.parent.name if repo.name == "repo" else repo.name
        if "click" in name:
            raise SystemExit("pallets/click is kept out of the suite (an independent check)")
        taken = 0
        for commit, path in single_python_file_commits(repo):
            if taken >= args.per_repo:
                break
            try:
                before = git(repo, "show", f"{commit}^:{path}")
                after = git(repo, "show", f"{commit}:{path}")
            except subprocess.CalledProcessError:
                continue  # added or deleted in this commit, or the first commit
            if qualifies(before, after):
                cases.append({"repo": name.replace("+", "/"), "commit": commit, "path": path,
                              "before": before, "after": after})  # fmt: skip
                taken += 1
        print(f"{name}: {taken} cases")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out, "wt", encoding="utf-8") as out:
        for case in cases:
            out.write(json.dumps(case) + "\n")
    print(f"{len(cases)} cases → {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
