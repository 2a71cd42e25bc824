"""The local tier: the keystroke path on an in-process llama.cpp model (one model lane)."""
