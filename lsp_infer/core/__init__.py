"""The completion core both tiers share: window, prompts, postprocessing, the backend
interface, cancel tokens and the engine. Pure: no model, no HTTP, no LSP types."""
