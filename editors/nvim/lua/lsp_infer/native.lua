-- Neovim 0.12+: ghost text from the built-in vim.lsp.inline_completion (it requests after a
-- 200 ms pause, shows the item with extmarks, and accepts it with get()). This module adds
-- what the runtime does not: accept a word or a line (get() with an on_accept handler that
-- inserts only part of the item), dismiss (get() with a handler that inserts nothing), and
-- "is a suggestion shown?" (the runtime's extmark namespace), cycling through the server's
-- choices (an Invoked request: the runtime only makes automatic ones), asking again when the
-- server says a better suggestion is ready (ready.lua; the runtime asks only when the user
-- enters insert mode, moves or types), and the suggestion lifecycle (lifecycle.lua: shown when
-- the runtime draws an item, dismissed when it goes away unaccepted; the runtime's get() runs
-- an accepted item's command through the client).
local lifecycle = require("lsp_infer.lifecycle")
local util = require("lsp_infer.util")

local M = {}

local function api()
  return vim.lsp.inline_completion
end

local function namespace()
  return vim.api.nvim_create_namespace("nvim.lsp.inline_completion")
end

local INVOKED = 1 -- InlineCompletionTriggerKind.Invoked
local AUTOMATIC = 2 -- InlineCompletionTriggerKind.Automatic

--- The runtime's inline completion class (private API: vim.lsp._capability), or nil.
local function completor_class()
  local ok, capability = pcall(require, "vim.lsp._capability")
  local Completor = ok and type(capability) == "table" and capability.all
    and capability.all.inline_completion
  return type(Completor) == "table" and Completor or nil
end

--- The runtime's inline completion state for a buffer, or nil.
local function completor_of(bufnr)
  local Completor = completor_class()
  return Completor and type(Completor.active) == "table" and Completor.active[bufnr] or nil
end

--- After the runtime drew (or dropped) its current item: tell the lifecycle what is on screen.
local function report_shown(completor)
  local current = completor.current
  local id = current and lifecycle.id_of(current.command)
  local marks = vim.api.nvim_buf_get_extmarks(completor.bufnr, namespace(), 0, -1, { limit = 1 })
  local drawn = #marks > 0
  if id and drawn then
    lifecycle.show(completor.bufnr, current.client_id, id)
  elseif not current then
    lifecycle.gone(completor.bufnr)
  end
end

--- Whether the runtime's current item still continues the text at the cursor: on the row its
--- range starts on, not before it, and (for lsp-infer's items) what was typed since is a prefix
--- of it.
local function still_valid(completor)
  local current = completor.current
  local range = current and current.range
  if not range or type(range.start) ~= "table" or type(range.start.row) ~= "number" then
    return true
  end
  local win = vim.fn.bufwinid(completor.bufnr)
  if win == -1 then
    return false
  end
  local row, col = unpack(vim.api.nvim_win_get_cursor(win))
  local start = range.start
  if row - 1 ~= start.row or col < start.col then
    return false
  end
  local line = vim.api.nvim_buf_get_lines(completor.bufnr, start.row, start.row + 1, false)[1]
  if not line or start.col > #line then
    return false
  end
  local client = vim.lsp.get_client_by_id(current.client_id)
  if client and client.name == util.name then
    local typed = line:sub(start.col + 1, col)
    if util.plain_text(current.insert_text):sub(1, #typed) ~= typed then
      return false
    end
  end
  return true
end

--- Work around the runtime (0.12-dev) redrawing its current item on every cursor move from the
--- item's old range: after <BS> at the end of a line that range lies past the line's end and
--- nvim_buf_set_extmark throws "Invalid 'col': out of range" on each keystroke. Drop an item
--- that no longer continues the text at the cursor before it is redrawn, and never let a
--- redraw raise.
local guarded = false
local function guard_runtime()
  if guarded then
    return
  end
  guarded = true
  local Completor = completor_class()
  if not Completor or type(Completor.show) ~= "function" then
    return
  end
  local show = Completor.show
  Completor.show = function(self, ...)
    if self.current then
      local valid_ok, valid = pcall(still_valid, self)
      if valid_ok and not valid then
        self.current = nil
      end
    end
    local shown, err = pcall(show, self, ...)
    if not shown then
      self.current = nil
      pcall(vim.api.nvim_buf_clear_namespace, self.bufnr, namespace(), 0, -1)
      require("vim.lsp.log").debug("lsp_infer: inline completion redraw failed", err)
    end
    pcall(report_shown, self)
  end
  -- An answer with nothing in it hides the item without a redraw.
  if type(Completor.select) == "function" then
    local select = Completor.select
    Completor.select = function(self, ...)
      select(self, ...)
      if not self.current then
        lifecycle.gone(self.bufnr)
      end
    end
  end
  -- get() and InsertLeave abort the item; get() accepts it right after, so a dismissal waits
  -- for the next tick to see whether it was.
  if type(Completor.abort) == "function" then
    local abort = Completor.abort
    Completor.abort = function(self, ...)
      lifecycle.gone_soon(self.bufnr)
      return abort(self, ...)
    end
  end
end

--- Turn the runtime's inline completion on for a buffer our client attached to.
---@param bufnr integer
function M.attach(bufnr)
  guard_runtime()
  api().enable(true, { bufnr = bufnr })
end

--- Whether a suggestion is on screen in the current buffer.
---@return boolean
function M.visible()
  local bufnr = vim.api.nvim_get_current_buf()
  return #vim.api.nvim_buf_get_extmarks(bufnr, namespace(), 0, -1, { limit = 1 }) > 0
end

--- The text of an item that is still to be inserted at the cursor (its range may start before
--- the cursor, covering what was typed since it was computed), or nil if the item does not
--- simply continue the text at the cursor.
---@param item vim.lsp.inline_completion.Item
---@return string?
local function rest_of(item)
  local text = util.plain_text(item.insert_text)
  local range = item.range
  if not range then
    return text
  end
  local start, finish = range.start, range.end_
  if type(start) ~= "table" or type(start.row) ~= "number" then
    return text
  end
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  row = row - 1
  if start.row ~= row or finish.row ~= row or start.col > col or finish.col ~= col then
    return nil
  end
  local line = vim.api.nvim_get_current_line()
  local typed = line:sub(start.col + 1, col)
  if text:sub(1, #typed) ~= typed then
    return nil
  end
  return text:sub(#typed + 1)
end

--- Accept the whole suggestion ("all"), its first word or its first line.
---@param part? "all"|"word"|"line"
---@return boolean accepted whether a suggestion was shown (and is being accepted)
function M.accept(part)
  part = part or "all"
  if part == "all" then
    return api().get()
  end
  return api().get({
    on_accept = function(item)
      local rest = rest_of(item)
      if rest == nil then
        -- Not a plain continuation of the cursor: take it whole, the runtime's way.
        local range = item.range
        local lines = vim.split(util.plain_text(item.insert_text), "\n", { plain = true })
        vim.api.nvim_buf_set_text(0, range.start.row, range.start.col, range.end_.row,
          range.end_.col, lines)
        return
      end
      local piece = part == "word" and util.first_word(rest) or util.first_line(rest)
      local text = util.plain_text(item.insert_text)
      local before = #text - #rest -- bytes of the item already typed
      util.insert_at_cursor(piece)
      local id = lifecycle.id_of(item.command)
      if piece == rest and item.command then
        lifecycle.accept(item.client_id, item.command, vim.api.nvim_get_current_buf())
      elseif id then
        lifecycle.partly(item.client_id, id, lifecycle.chars(text:sub(1, before + #piece)))
      end
    end,
  })
end

--- Hide the suggestion (and cancel the pending request).
---@return boolean dismissed whether one was shown
function M.dismiss()
  return api().get({ on_accept = function() end })
end

--- Ask lsp-infer (only: other clients keep their items) for inline completion at the cursor
--- with trigger `kind`, and hand the answer to the runtime's list as if the runtime had asked,
--- unless the user typed on, moved or left meanwhile (the runtime itself does not check that,
--- and an answer drawn at a place the user left would be wrong). `on_answer(completor)` runs
--- after the runtime took it.
---@param bufnr integer
---@param kind integer InlineCompletionTriggerKind
---@param on_answer? fun(completor: table)
---@return boolean asked
local function request_here(bufnr, kind, on_answer)
  local completor = completor_of(bufnr)
  local client = util.client(bufnr)
  if not completor or not client or not completor.client_state[client.id] then
    return false
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = kind }
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local cursor = vim.api.nvim_win_get_cursor(0)
  util.request(client, "textDocument/inlineCompletion", params, function(err, result)
    local now = vim.api.nvim_win_get_cursor(0)
    if err or type(result) ~= "table" or completor_of(bufnr) ~= completor
        or vim.api.nvim_get_current_buf() ~= bufnr
        or vim.api.nvim_buf_get_changedtick(bufnr) ~= tick
        or now[1] ~= cursor[1] or now[2] ~= cursor[2]
        or not vim.api.nvim_get_mode().mode:match("^[iR]") then
      return -- typed on, moved, or left: too late for this answer
    end
    completor:handler(nil, result, { client_id = client.id, bufnr = bufnr })
    if on_answer then
      on_answer(completor)
    end
  end, bufnr)
  return true
end

--- Ask the server for its choices at the cursor (an Invoked request), show them in the
--- runtime's place, and move `count` from the first.
local function request_choices(bufnr, count)
  return request_here(bufnr, INVOKED, function(completor)
    if completor.current and completor:count_items() > 1 then
      api().select({ bufnr = bufnr, count = count })
    end
  end)
end

--- Ask again at the cursor as the runtime's own automatic request would (Automatic: the
--- server then answers as to typing, from its cache, held to its confidence threshold; Invoked
--- would mean the user pressed a key). For lspInfer/suggestionReady (ready.lua): the runtime
--- has no way to be told to ask again, and asks only on entering insert mode, a move or an
--- edit.
---@param bufnr integer the current buffer
---@return boolean asked whether the runtime's inline completion is on for lsp-infer here (its
---  state has our client only while it is: vim.lsp.inline_completion.enable(false) drops it)
function M.request_again(bufnr)
  return request_here(bufnr, AUTOMATIC)
end

--- Show the next (count > 0) or previous choice. With one suggestion or none on screen, ask
--- the server for its choices first (as VS Code's Alt+] does) and move among them.
---@param count integer
---@return boolean asked whether lsp-infer can show choices here
function M.select(count)
  local bufnr = vim.api.nvim_get_current_buf()
  local completor = completor_of(bufnr)
  if completor and completor.current and completor:count_items() > 1 and M.visible() then
    api().select({ count = count })
    return true
  end
  return request_choices(bufnr, count)
end

return M
