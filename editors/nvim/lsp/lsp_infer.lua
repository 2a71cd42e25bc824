-- The client config for Neovim 0.11+'s vim.lsp.config / vim.lsp.enable("lsp_infer").
-- It follows require("lsp_infer").setup()'s options when setup() was called, else the
-- defaults: `lsp-infer serve`, common code filetypes, the server's default settings.
-- Override any field with vim.lsp.config("lsp_infer", { ... }).
return require("lsp_infer.config").lsp_config()
