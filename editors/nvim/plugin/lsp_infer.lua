-- Loaded at startup: user commands and the LspAttach hook only (cheap). Nothing starts until
-- require("lsp_infer").setup() or vim.lsp.enable("lsp_infer") is called.
if vim.g.loaded_lsp_infer then
  return
end
vim.g.loaded_lsp_infer = true
if vim.fn.has("nvim-0.10") ~= 1 then
  return
end
require("lsp_infer.commands").create()
require("lsp_infer").install_autocmds()
