"""What the cross suite's holes need from other files, and whether lspInfer/definitions can
bring it: no model, no language server, a second or two.

For each hole of bench/holes.py's cross suite: the names of the removed line that another
module of the package defines (and its own module does not), and how the line reaches them:
``module.name`` (a module imported whole), a name imported by name, or neither. Then, for the
``module.name`` holes: whether the server asks the editor about ``module`` in the pause
(local/definitions.py's names_to_ask), and whether ``name`` is defined within the first lines
of that module that an editor sends for it (editor.py's DEFINITION_TEXT_LINES/CHARS): only
then can the module's outline in the prompt show it.

    python bench/cross_names.py --holes 40 --seed 0
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.holes import _top_level_names, suites
from lsp_infer.editor import DEFINITION_TEXT_CHARS, DEFINITION_TEXT_LINES
from lsp_infer.local.definitions import names_to_ask

QUALIFIED = re.compile(r"([A-Za-z_]\w*)\.([A-Za-z_]\w*)")


def defined_in(name: str, text: str) -> bool:
    return bool(re.search(rf"^(?:class|def|async def)\s+{name}\b|^{name}\s*[:=]", text, re.M))


def imported_by_name(name: str, text: str) -> bool:
    return bool(re.search(rf"^\s*from\s+\S+\s+import\b[^\n]*\b{name}\b", text, re.M))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--holes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    counts = {"module.name": 0, "imported by name": 0, "neither": 0}
    asked = within = 0
    for hole in suites("cross", args.holes, args.seed)["cross"]:
        modules = {path.rsplit("/", 1)[-1][:-3]: text for path, text in hole.siblings}
        own = _top_level_names(hole.text)
        foreign = {n for text in modules.values() for n in _top_level_names(text)} - own
        asked_names = [name for name, *_ in names_to_ask(hole.text, hole.offset)]
        qualified = [
            (module, name)
            for module, name in QUALIFIED.findall(hole.expected)
            if module in modules and name in _top_level_names(modules[module]) and name in foreign
        ]
        if qualified:
            module, name = qualified[0]
            sent = "\n".join(modules[module].split("\n")[:DEFINITION_TEXT_LINES])
            in_sent = defined_in(name, sent[:DEFINITION_TEXT_CHARS])
            counts["module.name"] += 1
            asked += module in asked_names
            within += in_sent
            how = (
                f"{module}.{name}: module asked {module in asked_names}, in what is sent {in_sent}"
            )
        elif any(
            imported_by_name(n, hole.text) for n in foreign & set(re.findall(r"\w+", hole.expected))
        ):
            counts["imported by name"] += 1
            how = "imported by name"
        else:
            counts["neither"] += 1
            how = "neither"
        print(f"{hole.module:34} {how:70} | {hole.expected.strip()[:50]}")
    print(counts)
    print(
        f"module.name holes: the module asked in {asked}, the name within the first "
        f"{DEFINITION_TEXT_LINES} lines / {DEFINITION_TEXT_CHARS} characters sent in {within}"
    )


if __name__ == "__main__":
    main()
