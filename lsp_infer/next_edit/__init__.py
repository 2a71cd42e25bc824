"""Next-edit suggestions: the edit the user will make next, from the edits just made.

history.py records each document's recent edits; predict.py turns them into the edits that
are near certain (a rename carried to the name's other uses, with python_scopes.py's scopes);
service.py issues them by id and counts what became of them. No LSP types here: the protocol
edge (lsp/server.py, ``lspInfer/nextEdit``) converts."""
