-- lspInfer/warm: tell the server where the cursor came to rest without typing, so that it
-- evaluates the model's prompt for that place in the background and the first suggestion
-- there is fast. Sent (both paths, native and fallback) when a window or buffer attached to
-- lsp-infer is entered, and when the cursor moved without an edit and then stayed still for
-- `warm_ms`. Typing needs none: each keystroke already sends a completion request.
--
-- One timer for all buffers, restarted on each move. A move that came with an edit (its
-- b:changedtick differs from the one seen at the previous CursorMoved/TextChanged: Neovim fires
-- CursorMoved(I) before TextChanged(I) for the same edit) is not a rest. The same place (buffer,
-- changedtick, line, column) is not sent twice in a row.
local config = require("lsp_infer.config")
local util = require("lsp_infer.util")

local M = {}

local api = vim.api
local uv = vim.uv or vim.loop
local METHOD = "lspInfer/warm"

---@class lsp_infer.WarmState
---@field augroup integer
---@field seen integer b:changedtick at the latest CursorMoved/TextChanged (or enter)

---@type table<integer, lsp_infer.WarmState>
M.states = {}

local timer ---@type uv.uv_timer_t?
local pending ---@type integer? the buffer the timer is for
local last ---@type string? the place last sent: "bufnr:tick:line:character"

local function enabled()
  return config.options.warm ~= false
end

local function stop()
  pending = nil
  if timer then
    timer:stop()
  end
end

--- Send lspInfer/warm for the cursor of the current window, if it shows `bufnr` and the place
--- was not the last one sent.
---@param bufnr integer
function M.send(bufnr)
  if not enabled() or not M.states[bufnr] or api.nvim_get_current_buf() ~= bufnr then
    return
  end
  if not api.nvim_get_mode().mode:match("^[niR]") then
    return -- visual, operator-pending, command line: not a place to complete at
  end
  local client = util.client(bufnr)
  if not client or require("lsp_infer.status").disabled[client.id] then
    return
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding or "utf-16")
  local position = params.position
  local place = ("%d:%d:%d:%d"):format(bufnr, api.nvim_buf_get_changedtick(bufnr), position.line,
    position.character)
  if place == last then
    return
  end
  last = place
  util.notify(client, METHOD, { textDocument = params.textDocument, position = position })
end

--- (Re)start the one timer: warm `bufnr` once the cursor stays still for warm_ms.
local function schedule(bufnr)
  if not timer then
    timer = uv.new_timer()
  end
  timer:stop()
  pending = bufnr
  timer:start(config.options.warm_ms, 0, vim.schedule_wrap(function()
    if pending ~= bufnr then
      return
    end
    pending = nil
    local state = M.states[bufnr]
    if state and api.nvim_buf_is_valid(bufnr)
        and api.nvim_buf_get_changedtick(bufnr) == state.seen then
      M.send(bufnr)
    end
  end))
end

--- An edit in `bufnr`, or a move that came with one: not a rest, and a pending warm of the
--- buffer is dropped (typing took over).
local function edited(bufnr, state)
  state.seen = api.nvim_buf_get_changedtick(bufnr)
  if pending == bufnr then
    stop()
  end
end

local function entered(bufnr)
  local state = M.states[bufnr]
  if not state then
    return
  end
  state.seen = api.nvim_buf_get_changedtick(bufnr)
  stop()
  -- After the event: `:buffer` and window switches place the cursor afterwards.
  vim.schedule(function()
    M.send(bufnr)
  end)
end

--- Warm `bufnr` (attached to lsp-infer) on entering it and when its cursor rests.
---@param bufnr integer
function M.attach(bufnr)
  if M.states[bufnr] or not enabled() then
    return
  end
  local augroup = api.nvim_create_augroup("lsp_infer.warm." .. bufnr, { clear = true })
  ---@type lsp_infer.WarmState
  local state = { augroup = augroup, seen = api.nvim_buf_get_changedtick(bufnr) }
  M.states[bufnr] = state
  api.nvim_create_autocmd({ "BufEnter", "WinEnter" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      entered(bufnr)
    end,
  })
  api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      if api.nvim_buf_get_changedtick(bufnr) ~= state.seen then
        edited(bufnr, state) -- moved by an edit
        return
      end
      if enabled() then
        schedule(bufnr)
      end
    end,
  })
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      edited(bufnr, state)
    end,
  })
  api.nvim_create_autocmd({ "BufUnload", "BufWipeout" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      M.detach(bufnr)
    end,
  })
  -- Attached to the buffer on screen: the file was just opened (or the client just started).
  if bufnr == api.nvim_get_current_buf() then
    entered(bufnr)
  end
end

---@param bufnr integer
function M.detach(bufnr)
  local state = M.states[bufnr]
  if not state then
    return
  end
  M.states[bufnr] = nil
  if pending == bufnr then
    stop()
  end
  pcall(api.nvim_del_augroup_by_id, state.augroup)
  if next(M.states) == nil then
    timer = util.close_timer(timer)
  end
end

return M
