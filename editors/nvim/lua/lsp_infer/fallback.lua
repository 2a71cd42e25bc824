-- Ghost text without vim.lsp.inline_completion (Neovim 0.10/0.11, or `fallback = true`).
--
-- After a pause in typing (debounce_ms) on TextChangedI/CursorMovedI it sends
-- textDocument/inlineCompletion itself, cancels that request on the next keystroke, and shows
-- the answer with one extmark: the first line as inline virtual text at the cursor, the other
-- lines as virtual lines below. Typing the suggestion's next characters keeps the rest on
-- screen; leaving insert mode or dismissing clears it. <M-]> / <M-[> ask the server for its
-- choices (an Invoked request) and cycle through them; lspInfer/suggestionReady (ready.lua)
-- asks again with no keystroke. What becomes of each suggestion is told to the server through
-- lifecycle.lua.
local lifecycle = require("lsp_infer.lifecycle")
local util = require("lsp_infer.util")

local M = {}

local api = vim.api
local uv = vim.uv or vim.loop
local METHOD = "textDocument/inlineCompletion"
local INVOKED = 1 -- InlineCompletionTriggerKind.Invoked: the user asked (choices)
local AUTOMATIC = 2 -- InlineCompletionTriggerKind.Automatic

M.namespace = api.nvim_create_namespace("lsp_infer.ghost")
M.highlight = "LspInferGhost"

---@class lsp_infer.FallbackState
---@field bufnr integer
---@field client_id integer
---@field augroup integer
---@field timer uv.uv_timer_t?
---@field seq integer            the latest request's sequence number
---@field inflight {client_id: integer, id: integer, seq: integer}?
---@field items lsp_infer.Candidate[]? what the server offered, still to insert at the anchor
---@field index integer
---@field anchor [integer, integer]? 0-based row, byte column of the cursor they start at
---@field tick integer?          b:changedtick when they were last placed

---@class lsp_infer.Candidate
---@field text string        what is still to insert at the anchor
---@field full string        the item's whole text
---@field done integer       bytes of `full` already in the buffer (typed or accepted)
---@field id string?         the server's id for it (lifecycle.lua)
---@field command lsp.Command? its accept command

---@type table<integer, lsp_infer.FallbackState>
M.states = {}

local function define_highlight()
  api.nvim_set_hl(0, M.highlight, { link = "Comment", default = true })
end

local function cursor()
  local row, col = unpack(api.nvim_win_get_cursor(0))
  return row - 1, col
end

local function in_insert_mode()
  local mode = api.nvim_get_mode().mode
  return mode:sub(1, 1) == "i" or mode:sub(1, 1) == "R"
end

local byte_col = util.byte_col

--- The text of an item still to insert at the cursor (row, col), or nil if the item does not
--- continue the text at the cursor.
local function rest_of(bufnr, item, row, col, encoding)
  local text = util.plain_text(item.insertText or "")
  local range = item.range
  if type(range) ~= "table" then
    return text
  end
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local start, finish = range.start, range["end"]
  if start.line ~= row or finish.line ~= row then
    return nil
  end
  local start_col, end_col = byte_col(line, start.character, encoding),
    byte_col(line, finish.character, encoding)
  if end_col ~= col or start_col > col then
    return nil
  end
  local typed = line:sub(start_col + 1, col)
  if text:sub(1, #typed) ~= typed then
    return nil
  end
  return text:sub(#typed + 1)
end

local function hide(state)
  if api.nvim_buf_is_valid(state.bufnr) then
    api.nvim_buf_clear_namespace(state.bufnr, M.namespace, 0, -1)
  end
end

local function clear(state)
  hide(state)
  state.items, state.anchor, state.tick, state.index = nil, nil, nil, 1
  lifecycle.gone(state.bufnr) -- a dismissal, unless it was just accepted
end

local function stop_timer(state)
  if state.timer then
    state.timer:stop()
  end
end

--- Draw the current candidate at the anchor.
---@param state lsp_infer.FallbackState
---@param hint? string
local function render(state, hint)
  hide(state)
  local candidate = state.items and state.items[state.index]
  local text = candidate and candidate.text
  if not text or text == "" or not state.anchor then
    return
  end
  local lines = vim.split(text, "\n", { plain = true })
  local opts = { hl_mode = "combine", priority = 200 }
  local first = util.display(lines[1])
  if first ~= "" or hint then
    opts.virt_text = { { first, M.highlight } }
    if hint then
      table.insert(opts.virt_text, { hint, "NonText" })
    end
    opts.virt_text_pos = "inline"
  end
  if #lines > 1 then
    opts.virt_lines = {}
    for i = 2, #lines do
      table.insert(opts.virt_lines, { { util.display(lines[i]), M.highlight } })
    end
  end
  local row, col = state.anchor[1], state.anchor[2]
  local line = api.nvim_buf_get_lines(state.bufnr, row, row + 1, false)[1]
  if not line or col > #line then
    return
  end
  if pcall(api.nvim_buf_set_extmark, state.bufnr, M.namespace, row, col, opts) and candidate.id then
    lifecycle.show(state.bufnr, state.client_id, candidate.id)
  end
end

--- The candidates of an answer, still to insert at the cursor (row, col).
local function candidates(bufnr, result, row, col, encoding)
  local out = {}
  for _, item in ipairs(result.items or result) do
    local rest = type(item) == "table" and rest_of(bufnr, item, row, col, encoding)
    if rest and rest ~= "" then
      local full = util.plain_text(item.insertText or "")
      table.insert(out, {
        text = rest, full = full, done = #full - #rest,
        id = lifecycle.id_of(item.command), command = item.command,
      })
    end
  end
  return out
end

--- Ask the server for suggestions at the cursor: automatically (after a pause in typing) or
--- because the user asked (`kind` Invoked: up to completion.choices of them); `on_shown`
--- runs once the answer is on screen.
---@param state lsp_infer.FallbackState
---@param kind? integer
---@param on_shown? fun(state: lsp_infer.FallbackState)
local function request(state, kind, on_shown)
  local bufnr = state.bufnr
  if api.nvim_get_current_buf() ~= bufnr or not in_insert_mode() then
    return
  end
  local client = vim.lsp.get_client_by_id(state.client_id)
  if not client then
    return
  end
  util.cancel_inflight(state)
  local encoding = client.offset_encoding or "utf-16"
  local params = vim.lsp.util.make_position_params(0, encoding)
  params.context = { triggerKind = kind or AUTOMATIC }
  local row, col = cursor()
  local tick = api.nvim_buf_get_changedtick(bufnr)
  state.seq = state.seq + 1
  local seq = state.seq
  local ok, id = util.request(client, METHOD, params, function(err, result)
    if state.inflight and state.inflight.seq == seq then
      state.inflight = nil
    end
    if seq ~= state.seq or err or type(result) ~= "table" then
      return -- superseded by a newer request, cancelled, or failed (the server logs why)
    end
    if
      not api.nvim_buf_is_valid(bufnr)
      or api.nvim_get_current_buf() ~= bufnr
      or not in_insert_mode()
      or api.nvim_buf_get_changedtick(bufnr) ~= tick
    then
      return
    end
    local now_row, now_col = cursor()
    if now_row ~= row or now_col ~= col then
      return
    end
    local offered = candidates(bufnr, result, row, col, encoding)
    if #offered == 0 then
      clear(state)
      return
    end
    state.items, state.index, state.anchor, state.tick = offered, 1, { row, col }, tick
    render(state)
    if on_shown then
      on_shown(state)
    end
  end, bufnr)
  if ok and id then
    state.inflight = { client_id = client.id, id = id, seq = seq }
  end
end

local function schedule_request(state)
  if not state.timer then
    state.timer = uv.new_timer()
  end
  state.timer:stop()
  state.timer:start(require("lsp_infer.config").options.debounce_ms, 0, vim.schedule_wrap(function()
    if M.states[state.bufnr] == state then
      request(state)
    end
  end))
end

--- Keep what is still valid of the shown suggestion after a keystroke: typing its next
--- characters moves it along; anything else clears it.
---@param state lsp_infer.FallbackState
local function follow(state)
  if not state.items or not state.anchor then
    return
  end
  local row, col = cursor()
  local tick = api.nvim_buf_get_changedtick(state.bufnr)
  local anchor_row, anchor_col = state.anchor[1], state.anchor[2]
  if row ~= anchor_row or col < anchor_col then
    return clear(state)
  end
  if col == anchor_col then
    if tick ~= state.tick then
      clear(state) -- something changed at the cursor that is not the suggestion
    end
    return
  end
  if tick == state.tick then
    return clear(state) -- the cursor moved, nothing was typed
  end
  local line = api.nvim_get_current_line()
  local typed = line:sub(anchor_col + 1, col)
  local kept = {}
  for _, candidate in ipairs(state.items) do
    local text = candidate.text
    if #text > #typed and text:sub(1, #typed) == typed then
      table.insert(kept, vim.tbl_extend("force", candidate, {
        text = text:sub(#typed + 1), done = candidate.done + #typed,
      }))
    end
  end
  if #kept == 0 then
    return clear(state)
  end
  state.items, state.index, state.anchor, state.tick = kept, 1, { row, col }, tick
  render(state)
end

local function on_keystroke(state)
  follow(state)
  util.cancel_inflight(state)
  schedule_request(state)
end

--- Start showing suggestions from client `client_id` in `bufnr`.
---@param bufnr integer
---@param client_id integer
function M.attach(bufnr, client_id)
  if M.states[bufnr] then
    M.states[bufnr].client_id = client_id
    return
  end
  define_highlight()
  local augroup = api.nvim_create_augroup("lsp_infer.fallback." .. bufnr, { clear = true })
  ---@type lsp_infer.FallbackState
  local state = { bufnr = bufnr, client_id = client_id, augroup = augroup, seq = 0, index = 1 }
  M.states[bufnr] = state
  api.nvim_create_autocmd({ "TextChangedI", "CursorMovedI" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      on_keystroke(state)
    end,
  })
  api.nvim_create_autocmd("InsertEnter", {
    group = augroup,
    buffer = bufnr,
    callback = function()
      schedule_request(state)
    end,
  })
  api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      stop_timer(state)
      util.cancel_inflight(state)
      clear(state)
    end,
  })
  api.nvim_create_autocmd({ "BufUnload", "BufWipeout" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      M.detach(bufnr)
    end,
  })
  api.nvim_create_autocmd("ColorScheme", { group = augroup, callback = define_highlight })
end

---@param bufnr integer
function M.detach(bufnr)
  local state = M.states[bufnr]
  if not state then
    return
  end
  M.states[bufnr] = nil
  util.cancel_inflight(state)
  clear(state)
  state.timer = util.close_timer(state.timer)
  pcall(api.nvim_del_augroup_by_id, state.augroup)
end

local function current_state()
  local state = M.states[api.nvim_get_current_buf()]
  if state and state.items and state.items[state.index] and state.anchor then
    return state
  end
end

--- Whether a suggestion is on screen in the current buffer.
---@return boolean
function M.visible()
  return current_state() ~= nil
end

--- The suggestion on screen (text still to insert at the cursor), if any.
---@return string?
function M.current_text()
  local state = current_state()
  return state and state.items[state.index].text
end

--- Accept the whole suggestion ("all"), its first word or its first line. Safe in <expr>
--- mappings: the edit happens on the next tick.
---@param part? "all"|"word"|"line"
---@return boolean accepted
function M.accept(part)
  local state = current_state()
  if not state then
    return false
  end
  local candidate = state.items[state.index]
  local text = candidate.text
  local piece = text
  if part == "word" then
    piece = util.first_word(text)
  elseif part == "line" then
    piece = util.first_line(text)
  end
  local anchor = state.anchor
  vim.schedule(function()
    if M.states[state.bufnr] ~= state or api.nvim_get_current_buf() ~= state.bufnr then
      return
    end
    local row, col = cursor()
    if row ~= anchor[1] or col ~= anchor[2] then
      return
    end
    stop_timer(state)
    util.cancel_inflight(state)
    util.insert_at_cursor(piece)
    local remaining = text:sub(#piece + 1)
    if candidate.id and remaining == "" and candidate.command then
      lifecycle.accept(state.client_id, candidate.command, state.bufnr) -- all of it
    elseif candidate.id then
      local done = candidate.done + #piece
      lifecycle.partly(state.client_id, candidate.id, lifecycle.chars(candidate.full:sub(1, done)))
    end
    if remaining ~= "" then
      -- Keep showing the rest at once; the request that follows the edit refreshes it.
      local new_row, new_col = cursor()
      local rest = vim.tbl_extend("force", candidate,
        { text = remaining, done = candidate.done + #piece })
      state.items, state.index = { rest }, 1
      state.anchor, state.tick = { new_row, new_col }, api.nvim_buf_get_changedtick(state.bufnr)
      render(state)
    else
      clear(state)
    end
  end)
  return true
end

--- Hide the suggestion and cancel the request in flight.
---@return boolean dismissed whether one was shown
function M.dismiss()
  local state = M.states[api.nvim_get_current_buf()]
  if not state then
    return false
  end
  local shown = state.items ~= nil
  stop_timer(state)
  util.cancel_inflight(state)
  clear(state)
  return shown
end

--- Ask again at the cursor now, as the pause after a keystroke would (Automatic): for
--- lspInfer/suggestionReady (ready.lua), when the server has a better suggestion here than the
--- one it answered and the user has neither typed nor moved since, so nothing else asks.
---@param bufnr integer the current buffer
---@return boolean asked whether the fallback shows suggestions in `bufnr`
function M.request_again(bufnr)
  local state = M.states[bufnr]
  if not state then
    return false
  end
  stop_timer(state) -- a request about to go would ask the same
  request(state, AUTOMATIC)
  return true
end

local function move(state, count)
  local n = #state.items
  state.index = (state.index - 1 + count) % n + 1
  render(state, (" (%d/%d)"):format(state.index, n))
end

--- Show the next (count > 0) or previous candidate. With one or none on screen, ask the server
--- for its choices first (an Invoked request, as VS Code's Alt+] does) and move among them.
---@param count integer
---@return boolean asked whether there is an lsp-infer client in this buffer
function M.select(count)
  local state = M.states[api.nvim_get_current_buf()]
  if not state or not in_insert_mode() then
    return false
  end
  if state.items and #state.items > 1 and state.anchor then
    move(state, count)
    return true
  end
  stop_timer(state)
  request(state, INVOKED, function(answered)
    if #answered.items > 1 then
      move(answered, count)
    end
  end)
  return true
end

return M
