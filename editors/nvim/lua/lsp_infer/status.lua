-- What the server said about its model (lspInfer/status) and which of its progress reports can
-- be cancelled. Feeds require("lsp_infer").status() for statuslines and :checkhealth.
local util = require("lsp_infer.util")

local M = {}

---@type table<integer, {state: string, message: string}>
M.by_client = {}
---@type table<integer, table<string|integer, string>> client id -> token -> title
M.cancellable = {}
--- Whether completions are switched off (:LspInferToggle), per client.
---@type table<integer, boolean>
M.disabled = {}

local function changed()
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "LspInferStatus", modeline = false })
  pcall(vim.cmd.redrawstatus)
end

function M.on_status(_, result, ctx)
  if type(result) ~= "table" or type(result.state) ~= "string" then
    return
  end
  local message = type(result.message) == "string" and result.message or ""
  M.by_client[ctx.client_id] = { state = result.state, message = message }
  if result.state == "failed" and require("lsp_infer.config").options.notify_failed then
    util.notify_once(
      "failed:" .. message,
      ("lsp-infer: the model failed to load: %s\nCompletions are off. Run `lsp-infer doctor` "
        .. "or :checkhealth lsp_infer."):format(message ~= "" and message or "no reason given"),
      vim.log.levels.ERROR
    )
  end
  vim.schedule(changed)
end

--- window/showMessage from lsp-infer: the server repeats a model failure as
--- "lsp-infer: completions are off: <error>"; when on_status already said so, say it once.
---@return boolean handled whether the message was a repeat (and is dropped)
function M.on_show_message(_, result, ctx)
  local message = type(result) == "table" and result.message
  local error = type(message) == "string" and message:match("^lsp%-infer: completions are off: (.*)$")
  local status = M.by_client[ctx.client_id]
  return error ~= nil and status ~= nil and status.state == "failed" and status.message == error
    and require("lsp_infer.config").options.notify_failed
end

function M.on_progress(_, result, ctx)
  local value = type(result) == "table" and result.value
  if type(value) ~= "table" or result.token == nil then
    return
  end
  local tokens = M.cancellable[ctx.client_id] or {}
  M.cancellable[ctx.client_id] = tokens
  if value.kind == "begin" and value.cancellable then
    tokens[result.token] = value.title or "lsp-infer"
  elseif value.kind == "end" then
    tokens[result.token] = nil
  end
end

--- The latest lspInfer/status of the client for `bufnr` (or of any lsp-infer client).
---@param bufnr? integer
---@return {state: string, message: string}?, vim.lsp.Client?
function M.get(bufnr)
  local client = util.client(bufnr) or util.clients()[1]
  if not client then
    return nil, nil
  end
  return M.by_client[client.id], client
end

--- A short text for statuslines: "" without a client, else "lsp-infer: loading|ready|failed|off".
---@param bufnr? integer
---@return string
function M.text(bufnr)
  local status, client = M.get(bufnr)
  if not client then
    return ""
  end
  if M.disabled[client.id] then
    return "lsp-infer: off"
  end
  return "lsp-infer: " .. (status and status.state or "starting")
end

return M
