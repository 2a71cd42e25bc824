-- Small helpers shared by the plugin's modules: Neovim version differences, LSP client
-- calls that work on 0.10 (`client.request(...)`) and 0.11+ (`client:request(...)`), and
-- the text of a suggestion (first word / first line).
local M = {}

M.name = "lsp_infer" -- the client (and vim.lsp.config) name

--- Neovim 0.11+ made client methods take `self` (`client:request`); 0.10 has plain functions.
local has_011 = vim.fn.has("nvim-0.11") == 1

M.RequestCancelled = -32800
M.ContentModified = -32801

---@param client vim.lsp.Client
---@return boolean ok, integer? request_id
function M.request(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.notify(client, method, params)
  if has_011 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

function M.cancel(client, id)
  if has_011 then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

--- The lsp-infer clients (optionally: attached to `bufnr`).
---@param bufnr? integer
---@return vim.lsp.Client[]
function M.clients(bufnr)
  return vim.lsp.get_clients({ name = M.name, bufnr = bufnr })
end

--- The lsp-infer client for a buffer (0: current), if one is attached.
---@param bufnr? integer
---@return vim.lsp.Client?
function M.client(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  return M.clients(bufnr)[1]
end

--- JSON encodes an empty Lua table as `[]`; settings objects must stay objects. Every empty
--- table except the `exclude` list becomes `vim.empty_dict()`, recursively (a copy).
---@param value any
---@param key? string
function M.objects(value, key)
  if type(value) ~= "table" then
    return value
  end
  if next(value) == nil then
    if key == "exclude" then
      return {}
    end
    return vim.empty_dict()
  end
  local out = {}
  for k, v in pairs(value) do
    out[k] = M.objects(v, type(k) == "string" and k or nil)
  end
  return out
end

--- The part of a suggestion that one "accept word" takes: a newline with the next line's
--- indentation, or leading spaces plus one run of word characters (or of punctuation).
---@param text string
---@return string
function M.first_word(text)
  if text == "" then
    return ""
  end
  local newline = text:match("^\r?\n[ \t]*")
  if newline then
    return newline
  end
  return text:match("^[ \t]*[%w_]+") or text:match("^[ \t]*[^%w_%s]+") or text:match("^[ \t]+")
    or text:sub(1, 1)
end

--- The part of a suggestion that one "accept line" takes: leading newlines, then the rest of
--- the line (the newline that ends it stays in the suggestion).
---@param text string
---@return string
function M.first_line(text)
  return text:match("^[\r\n]*[^\r\n]*") or text
end

--- An inline completion item's insert text as a plain string (snippets: their raw text with
--- placeholders resolved by Neovim's snippet grammar when available).
---@param insert_text string|{kind: string, value: string}
---@return string
function M.plain_text(insert_text)
  if type(insert_text) == "string" then
    return (insert_text:gsub("\r\n", "\n"))
  end
  if type(insert_text) == "table" and type(insert_text.value) == "string" then
    local ok, grammar = pcall(require, "vim.lsp._snippet_grammar")
    if ok then
      local parsed_ok, parsed = pcall(grammar.parse, insert_text.value)
      if parsed_ok then
        return tostring(parsed)
      end
    end
    return insert_text.value
  end
  return ""
end

--- Insert `text` at the cursor of the current window (insert mode) and put the cursor after it.
---@param text string
function M.insert_at_cursor(text)
  if text == "" then
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local lines = vim.split(text, "\n", { plain = true })
  vim.api.nvim_buf_set_text(bufnr, row - 1, col, row - 1, col, lines)
  local last = lines[#lines]
  if #lines == 1 then
    vim.api.nvim_win_set_cursor(0, { row, col + #last })
  else
    vim.api.nvim_win_set_cursor(0, { row + #lines - 1, #last })
  end
end

--- Notify once per distinct key for the whole session.
local notified = {}
function M.notify_once(key, message, level)
  if notified[key] then
    return
  end
  notified[key] = true
  vim.notify(message, level or vim.log.levels.WARN, { title = "lsp-infer" })
end

return M
