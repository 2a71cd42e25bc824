"""lsp-infer: inline code completions from an in-process llama.cpp model, over LSP."""

__version__ = "0.1.0"
