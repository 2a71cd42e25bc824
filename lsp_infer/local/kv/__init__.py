"""The prompt cache (prompt_cache.py): the one owner of the model's KV cache and of the
documents' prompts kept beside it, in RAM (states.py) and on disk (files.py).

Only this package touches the llama.cpp sequence (sequence.py: its token count, its tokens,
copies of it). Everything else uses ``PromptCache``; the import rules
(tests/unit/test_architecture.py) keep the modules inside private to the package.
"""

from lsp_infer.local.kv.files import default_directory, state_files
from lsp_infer.local.kv.prompt_cache import KEEP_AT_LEAST, PromptCache
from lsp_infer.local.kv.states import KvState
from lsp_infer.local.kv.token_reuse import common_prefix

__all__ = [
    "KEEP_AT_LEAST", "KvState", "PromptCache", "common_prefix", "default_directory", "state_files",
]  # fmt: skip
