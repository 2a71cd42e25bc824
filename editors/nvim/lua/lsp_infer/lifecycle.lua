-- The suggestion lifecycle, Neovim side: tell the server which of its suggestions were shown,
-- accepted (the item's command), partly accepted (a word or a line, with the accepted length)
-- or dismissed. The server keeps the counts for lspInfer/stats, in memory on this machine.
--
-- Both ghost-text paths call this module: native.lua (Neovim 0.12's vim.lsp.inline_completion)
-- and fallback.lua (the plugin's own extmarks). One suggestion per buffer is on screen:
--   shown      when its ghost text is drawn (once per item; another item drawn in its place,
--              e.g. the next choice, dismisses the one before it)
--   accepted   when the item's command runs (<Tab>; the runtime's get() runs it through the
--              client, which hands it to M.command below; the fallback runs it itself)
--   partly     when <M-Right> / <M-C-Right> take a word / a line of it
--   dismissed  when its ghost text goes away without an accept: <C-]>, leaving insert mode,
--              typing something else, an answer with nothing or something else
-- The server ignores the dismissal of an item whose rest (after typing into it) was shown
-- since, and of one it already counts as (partly) accepted.
local util = require("lsp_infer.util")

local M = {}

M.ACCEPT = "lspInfer.acceptSuggestion"
M.DID_SHOW = "lspInfer/didShowSuggestion"
M.DID_PARTIALLY_ACCEPT = "lspInfer/didPartiallyAcceptSuggestion"
M.DID_DISMISS = "lspInfer/didDismissSuggestion"

---@type table<integer, {id: string, client_id: integer}> the item on screen per buffer
M.shown = {}
---@type table<string, true> items accepted, whole or in part: their going away is no dismissal
local settled = {}
local settled_count = 0

--- The id in an lsp-infer item's accept command, or nil.
---@param command? lsp.Command
---@return string?
function M.id_of(command)
  if type(command) ~= "table" or command.command ~= M.ACCEPT then
    return nil
  end
  local argument = type(command.arguments) == "table" and command.arguments[1]
  local id = type(argument) == "table" and argument.id
  return type(id) == "string" and id ~= "" and id or nil
end

local function send(client_id, method, params)
  local client = vim.lsp.get_client_by_id(client_id)
  if client then
    pcall(util.notify, client, method, params)
  end
end

local function settle(id)
  if not settled[id] then
    settled[id] = true
    settled_count = settled_count + 1
    if settled_count > 1000 then -- bounded: the oldest no longer matter
      settled, settled_count = { [id] = true }, 1
    end
  end
end

--- The ghost text of item `id` (from client `client_id`) is on screen in `bufnr`.
function M.show(bufnr, client_id, id)
  local previous = M.shown[bufnr]
  if previous and previous.id == id then
    return
  end
  M.shown[bufnr] = { id = id, client_id = client_id }
  -- "shown" first: the server then knows the rest of a suggestion is on screen before the
  -- item it continues is dismissed.
  send(client_id, M.DID_SHOW, { id = id })
  if previous and not settled[previous.id] then
    send(previous.client_id, M.DID_DISMISS, { id = previous.id })
  end
end

--- Nothing of lsp-infer's is on screen in `bufnr` any more: what was is dismissed, unless it
--- was accepted.
function M.gone(bufnr)
  local previous = M.shown[bufnr]
  M.shown[bufnr] = nil
  if previous and not settled[previous.id] then
    send(previous.client_id, M.DID_DISMISS, { id = previous.id })
  end
end

--- Like gone(), on the next tick: the runtime clears its item before it accepts it.
function M.gone_soon(bufnr)
  local previous = M.shown[bufnr]
  if not previous then
    return
  end
  vim.schedule(function()
    if M.shown[bufnr] == previous then
      M.gone(bufnr)
    end
  end)
end

--- The whole item is accepted: run its command on the server (workspace/executeCommand).
---@param client_id integer
---@param command lsp.Command
---@param bufnr integer
function M.accept(client_id, command, bufnr)
  local id = M.id_of(command)
  if id then
    settle(id)
    if M.shown[bufnr] and M.shown[bufnr].id == id then
      M.shown[bufnr] = nil
    end
  end
  local client = vim.lsp.get_client_by_id(client_id)
  if client then
    util.request(client, "workspace/executeCommand", {
      command = command.command,
      arguments = command.arguments,
    }, function() end, bufnr)
  end
end

--- Part of the item is accepted: `accepted_length` characters of its text (from its start,
--- what was typed of it included) are in the buffer now.
function M.partly(client_id, id, accepted_length)
  settle(id)
  send(client_id, M.DID_PARTIALLY_ACCEPT, { id = id, acceptedLength = accepted_length })
end

--- The client-side handler of the accept command (the client config's `commands`): what the
--- runtime's get() runs after inserting an item.
---@param command lsp.Command
---@param ctx {client_id: integer, bufnr: integer}
function M.command(command, ctx)
  M.accept(ctx.client_id, command, ctx.bufnr)
end

--- Characters (not bytes) of a string, as the server counts them.
---@param text string
---@return integer
function M.chars(text)
  return vim.fn.strchars(text)
end

return M
