"""The team tier: the team's OpenAI-compatible servers (vLLM) for refactors and invoked
completions."""
