"""Which prompt asks a model for a like change best: the unified diff the server uses
(next_edit/analogy.py) against a plain instruction in the model's chat format, on the same
lines of the same model.

Each case of the history suite where the rules predict nothing and analogy_for picks a line
like the edited one (the server's own choice of line; the server also leaves out a Python
name changed to another, which is the rename rule's: this comparison of prompts keeps those
46 cases as they were measured) is asked both ways, greedily, through
llama-cpp-python's own completion (the chat prompt needs its special tokens, which the
server's tokenizer never parses from text). Right: agrees() with the commit, as in
bench/next_edit.py. Reported per prompt: answered (a changed line that parses), right, and
both at each threshold of the least token probability of the line.

    python bench/next_edit_prompts.py --model qwen2.5-coder-0.5b
    python bench/next_edit_prompts.py --model qwen2.5-coder-1.5b
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from pathlib import Path

from llama_cpp import Llama

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from next_edit import HISTORY_SUITE, agrees, first_splice  # noqa: E402

from lsp_infer.models import embedded_model, resolve_model  # noqa: E402
from lsp_infer.next_edit.analogy import Analogy, analogy_for, analogy_prompt  # noqa: E402
from lsp_infer.next_edit.history import EditHistory  # noqa: E402
from lsp_infer.next_edit.predict import predict  # noqa: E402
from lsp_infer.next_edit.python_scopes import parses  # noqa: E402

THRESHOLDS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9)


def instruction_prompt(analogy: Analogy) -> str:
    return (
        "<|im_start|>system\nYou edit code. Reply with one line of code only.<|im_end|>\n"
        f"<|im_start|>user\nThis line:\n{analogy.old_line}\nwas changed to:\n"
        f"{analogy.new_line}\nMake the same change to this line:\n{analogy.target_line}"
        "<|im_end|>\n<|im_start|>assistant\n"
    )


def ask(llm: Llama, prompt: str) -> tuple[str, float]:
    """The model's line and the least probability among its tokens."""
    out = llm.create_completion(prompt, max_tokens=96, temperature=0, stop=["\n"], logprobs=1)
    choice = out["choices"][0]  # type: ignore[index]
    logprobs = [p for p in (choice["logprobs"] or {}).get("token_logprobs") or [] if p is not None]
    return choice["text"].strip().strip("`"), math.exp(min(logprobs)) if logprobs else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="embedded name or GGUF")
    parser.add_argument("--file", type=Path, default=HISTORY_SUITE)
    args = parser.parse_args()
    path = args.model if args.model.endswith(".gguf") else str(
        resolve_model(None, model=embedded_model(args.model)).path
    )  # fmt: skip
    llm = Llama(model_path=path, n_ctx=2048, n_threads=2, logits_all=True, verbose=False)
    with gzip.open(args.file, "rt", encoding="utf-8") as lines:
        cases = [json.loads(line) for line in lines]
    found: dict[str, list[tuple[float, bool]]] = {"diff": [], "instruction": []}
    asked = 0
    for case in cases:
        before, after = case["before"], case["after"]
        splice = first_splice(before, after)
        history = EditHistory()
        history.record(before, splice)
        edited = before[: splice.start] + splice.new + before[splice.end :]
        if predict(edited, history.edits, syntax="python") is not None:
            continue
        analogy = analogy_for(edited, history.edits[-1])
        if analogy is None:
            continue
        asked += 1
        target = analogy.target_line
        indent = target[: len(target) - len(target.lstrip())]
        for name, prompt in (("diff", analogy_prompt(case["path"], analogy)),
                             ("instruction", instruction_prompt(analogy))):  # fmt: skip
            line, sureness = ask(llm, prompt)
            new = indent + line
            if not line or new == target.rstrip():
                continue
            lines = edited.split("\n")
            lines[analogy.target] = new
            predicted = "\n".join(lines)
            if parses(predicted):
                found[name].append((sureness, agrees(edited, predicted, after)))
    print(f"{path}: {len(cases)} commits ({args.file.name}), {asked} asked of the model")
    for name, answers in found.items():
        cells = []
        for gate in THRESHOLDS:
            kept = [right for sureness, right in answers if sureness >= gate]
            cells.append(f">={gate}: {sum(kept)}/{len(kept)}")
        print(f"  {name:<12} right/shown " + "  ".join(cells))


if __name__ == "__main__":
    main()
