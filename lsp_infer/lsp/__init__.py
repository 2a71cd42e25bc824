"""The protocol edge: pygls wiring, lsprotocol conversions, the stdio transport, and the
editor facade the tiers talk to. The only package that imports pygls or lsprotocol."""
