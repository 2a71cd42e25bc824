-- lspInfer/suggestionReady: the server's word that a better suggestion is ready where the
-- cursor rests (docs/protocol.md). In a file the model has not seen, the server answers the
-- first request from a smaller window ("cold start") and often hides that guess (an empty
-- answer); it then evaluates the whole window in the background. Nothing would ask for the
-- result: the runtime and the fallback ask only when the user enters insert mode, moves or
-- types, and the user is waiting for a suggestion, doing none of these. So the server tells the
-- editor where it is ready, and the plugin asks again there, as an automatic request (the
-- server answers it at once from its cache). The same happens when a pause's new pick of
-- other files' code gives another suggestion where the cursor rests.
--
-- Announced in the client's capabilities (experimental.lspInfer.suggestionReady, config.lua).
-- Only the current buffer, in insert mode, unchanged since (the same LSP version), with the
-- cursor at that position and suggestions on is asked again; otherwise the user moved on and the
-- notification is dropped. A malformed one is dropped too: nothing here raises.
local config = require("lsp_infer.config")
local util = require("lsp_infer.util")

local M = {}

local api = vim.api

M.METHOD = "lspInfer/suggestionReady"

local function is_count(value)
  return type(value) == "number" and value >= 0 and value == math.floor(value)
end

--- The notification's uri, version, line and character, or nil when it is not well formed.
---@param params any
---@return {uri: string, version: integer, line: integer, character: integer}?
function M.parse(params)
  if type(params) ~= "table" then
    return nil
  end
  local document, position = params.textDocument, params.position
  if type(document) ~= "table" or type(position) ~= "table" then
    return nil
  end
  local ready = { uri = document.uri, version = document.version, line = position.line,
    character = position.character }
  if type(ready.uri) ~= "string" or not is_count(ready.version) or not is_count(ready.line)
      or not is_count(ready.character) then
    return nil
  end
  return ready
end

--- The buffer's document version as lsp-infer last heard it (util.version).
local version_of = util.version

--- Whether the user is still where the suggestion is ready: the current buffer shows `ready.uri`
--- and is attached to `client`, in insert mode, at `ready.version`, with the cursor at the
--- position (compared in the client's position encoding, as the request would send it).
---@param client vim.lsp.Client
---@param ready {uri: string, version: integer, line: integer, character: integer}
---@return integer? bufnr
local function still_there(client, ready)
  local bufnr = api.nvim_get_current_buf()
  local attached = util.client(bufnr)
  if not attached or attached.id ~= client.id or vim.uri_from_bufnr(bufnr) ~= ready.uri then
    return nil
  end
  if not api.nvim_get_mode().mode:match("^[iR]") or version_of(bufnr) ~= ready.version then
    return nil -- left insert mode, or typed after the server sent it
  end
  local position = vim.lsp.util.make_position_params(0, client.offset_encoding or "utf-16")
    .position
  if position.line ~= ready.line or position.character ~= ready.character then
    return nil
  end
  return bufnr
end

--- Ask again at the cursor through whichever shows suggestions in `bufnr`.
---@param bufnr integer
---@return boolean asked
local function ask_again(bufnr)
  local fallback = require("lsp_infer.fallback")
  if fallback.states[bufnr] then
    return fallback.request_again(bufnr)
  end
  if config.path() == "native" then
    return require("lsp_infer.native").request_again(bufnr)
  end
  return false
end

--- Act on one notification from client `client_id`.
---@param params any
---@param client_id integer
---@return boolean asked whether it asked again
function M.on_ready(params, client_id)
  local ready = M.parse(params)
  local client = ready and vim.lsp.get_client_by_id(client_id)
  if not ready or not client or client.name ~= util.name then
    return false
  end
  if require("lsp_infer.status").disabled[client.id] then
    return false -- :LspInferToggle off
  end
  local bufnr = still_there(client, ready)
  return bufnr ~= nil and ask_again(bufnr)
end

--- The handler (the client config's `handlers`). Stdio notifications arrive scheduled (rpc.lua
--- wraps them); one from elsewhere may come in a fast event, where the API is off limits.
function M.handler(_, params, ctx)
  local function run()
    local ok, why = pcall(M.on_ready, params, ctx and ctx.client_id or -1)
    if not ok then
      require("vim.lsp.log").debug("lsp_infer: " .. M.METHOD .. ": " .. tostring(why))
    end
  end
  if vim.in_fast_event() then
    vim.schedule(run)
  else
    run()
  end
end

return M
