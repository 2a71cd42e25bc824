-- Next-edit suggestions (lspInfer/nextEdit, docs/protocol.md): after the user edits and pauses,
-- the server predicts the edit that comes next somewhere in the document (a parameter renamed
-- on its `def` line: the same rename in the body) as a group of edits at one document version.
--
-- After an edit (TextChanged, TextChangedI) and a pause of next_edit.debounce_ms, the plugin
-- asks at the cursor of the current buffer, on the lsp-infer client only; the next edit
-- cancels that request. An answer for another version than the buffer's is dropped. A
-- suggestion is drawn with extmarks of its own namespace: the removed text struck through, the
-- inserted text as inline virtual text after it, and, while the first edit is off screen, a
-- hint at the end of the cursor's line. The accept key (normal mode, <Tab>) first goes to the
-- edit, then applies the whole group (one undo step) if the buffer is still at that version;
-- the dismiss key (<Esc>), any further edit, leaving the buffer or a newer suggestion take it
-- away. The server is told what became of it (didShow / didAccept / didRejectNextEdit).
local config = require("lsp_infer.config")
local util = require("lsp_infer.util")

local M = {}

local api = vim.api
local uv = vim.uv or vim.loop

M.METHOD = "lspInfer/nextEdit"
M.DID_SHOW = "lspInfer/didShowNextEdit"
M.DID_ACCEPT = "lspInfer/didAcceptNextEdit"
M.DID_REJECT = "lspInfer/didRejectNextEdit"

M.namespace = api.nvim_create_namespace("lsp_infer.next_edit")
M.highlights = {
  delete = "LspInferNextEditDelete", -- the text the edit removes
  insert = "LspInferNextEditInsert", -- the text it inserts
  hint = "LspInferNextEditHint", -- where it is, while off screen
}

---@class lsp_infer.NextEditItem
---@field range lsp.Range   in the document at the suggestion's version
---@field text string

---@class lsp_infer.NextEdit
---@field id string
---@field client_id integer
---@field encoding string      the client's position encoding (the ranges are in it)
---@field version integer      the document version the edits apply to (an edit since: stale)
---@field kind string?
---@field label string?
---@field edits lsp_infer.NextEditItem[]

---@class lsp_infer.NextEditState
---@field bufnr integer
---@field client_id integer
---@field augroup integer
---@field timer uv.uv_timer_t?
---@field seq integer          the latest request's number (an answer to an older one is dropped)
---@field inflight {client_id: integer, id: integer}?
---@field seen integer?        the document version after the latest edit handled
---@field shown lsp_infer.NextEdit?
---@field keys string[]        the normal-mode keys mapped in the buffer

---@type table<integer, lsp_infer.NextEditState>
M.states = {}

local function options()
  return config.options.next_edit or config.defaults.next_edit
end

local function enabled()
  return options().enabled ~= false
end

--- The server does not predict with its nextEdit.enabled off: asking would only get empties.
local function server_off(client)
  local section = client.settings and client.settings.lspInfer
  return type(section) == "table" and type(section.nextEdit) == "table"
    and section.nextEdit.enabled == false
end

--- The buffer's document version as lsp-infer last heard it (util.version).
local version_of = util.version

local function define_highlights()
  -- `default`: a colour scheme or the user's own definition wins.
  api.nvim_set_hl(0, M.highlights.delete, { strikethrough = true, default = true })
  api.nvim_set_hl(0, M.highlights.insert, { link = "Comment", default = true })
  api.nvim_set_hl(0, M.highlights.hint, { link = "Comment", default = true })
end

local function is_count(value)
  return type(value) == "number" and value >= 0 and value == math.floor(value)
end

local function is_position(value)
  return type(value) == "table" and is_count(value.line) and is_count(value.character)
end

--- The answer's suggestion for `version`, or nil when it is empty, for another version, or not
--- well formed (nothing here raises on a malformed answer).
---@param result any
---@param version integer
---@return {id: string, kind: string?, label: string?, edits: lsp_infer.NextEditItem[]}?
function M.parse(result, version)
  if type(result) ~= "table" or result.version ~= version or type(result.id) ~= "string" then
    return nil
  end
  if type(result.edits) ~= "table" or #result.edits == 0 then
    return nil
  end
  local edits = {}
  for _, edit in ipairs(result.edits) do
    local range = type(edit) == "table" and edit.range
    if type(range) ~= "table" or not is_position(range.start) or not is_position(range["end"])
        or type(edit.text) ~= "string" then
      return nil
    end
    table.insert(edits, { range = range, text = edit.text })
  end
  local function text(value)
    return type(value) == "string" and value or nil
  end
  return { id = result.id, kind = text(result.kind), label = text(result.label), edits = edits }
end

--- A position of the suggestion as (row, byte column) in the buffer; a position past the end
--- (a range ending on the line after the last) is the end of the last line.
local function to_buffer(bufnr, position, encoding)
  local count = api.nvim_buf_line_count(bufnr)
  if position.line >= count then
    local last = api.nvim_buf_get_lines(bufnr, count - 1, count, false)[1] or ""
    return count - 1, #last
  end
  local line = api.nvim_buf_get_lines(bufnr, position.line, position.line + 1, false)[1] or ""
  return position.line, util.byte_col(line, position.character, encoding)
end

--- Where the suggestion's first edit starts: (row, byte column).
local function first_place(state, shown)
  return to_buffer(state.bufnr, shown.edits[1].range.start, shown.encoding)
end

--- The hint at the end of the cursor's line: the label, the line to go to and the key.
local function hint_text(shown, row)
  local text = ("  %s · line %d"):format(shown.label or "next edit", row + 1)
  local keymaps = config.options.keymaps ~= false and options().keymaps
  local key = type(keymaps) == "table" and keymaps.accept
  if type(key) == "string" and key ~= "" then
    text = text .. " · " .. key
  end
  return text
end

--- Draw `shown` in the state's buffer (the current one), replacing what was drawn.
---@return boolean drawn whether every mark could be set
local function render(state, shown)
  local bufnr = state.bufnr
  api.nvim_buf_clear_namespace(bufnr, M.namespace, 0, -1)
  local ok = true
  local function mark(row, col, opts)
    opts.priority = 200 -- above syntax and treesitter, so the strikethrough shows
    ok = pcall(api.nvim_buf_set_extmark, bufnr, M.namespace, row, col, opts) and ok
  end
  for _, edit in ipairs(shown.edits) do
    local start_row, start_col = to_buffer(bufnr, edit.range.start, shown.encoding)
    local end_row, end_col = to_buffer(bufnr, edit.range["end"], shown.encoding)
    if end_row > start_row or end_col > start_col then
      mark(start_row, start_col, { end_row = end_row, end_col = end_col,
        hl_group = M.highlights.delete })
    end
    if edit.text ~= "" then
      -- After the removed text: "wdth" struck through, then "width".
      local lines = vim.split(edit.text, "\n", { plain = true })
      local opts = { virt_text = { { util.display(lines[1]), M.highlights.insert } },
        virt_text_pos = "inline" }
      if #lines > 1 then
        opts.virt_lines = {}
        for i = 2, #lines do
          table.insert(opts.virt_lines, { { util.display(lines[i]), M.highlights.insert } })
        end
      end
      mark(end_row, end_col, opts)
    end
  end
  -- The first edit off screen: say where it is at the cursor, where the user looks.
  local row = first_place(state, shown)
  if api.nvim_get_current_buf() == bufnr
      and (row + 1 < vim.fn.line("w0") or row + 1 > vim.fn.line("w$")) then
    local cursor_row = api.nvim_win_get_cursor(0)[1] - 1
    mark(cursor_row, 0, { virt_text = { { hint_text(shown, row), M.highlights.hint } },
      virt_text_pos = "eol" })
  end
  return ok
end

local function cancel_inflight(state)
  state.seq = state.seq + 1 -- an answer already on its way is dropped too
  util.cancel_inflight(state)
end

local function stop_timer(state)
  if state.timer then
    state.timer:stop()
  end
end

local function tell(shown, method)
  local client = vim.lsp.get_client_by_id(shown.client_id)
  if client then
    pcall(util.notify, client, method, { id = shown.id })
  end
end

--- Take the suggestion off the screen; `method` tells the server why (none: it was applied
--- and the caller tells it).
---@param method? string
local function clear(state, method)
  local shown = state.shown
  state.shown = nil
  if api.nvim_buf_is_valid(state.bufnr) then
    api.nvim_buf_clear_namespace(state.bufnr, M.namespace, 0, -1)
  end
  if shown and method then
    tell(shown, method)
  end
end

local function askable_mode()
  local mode = api.nvim_get_mode().mode
  -- Normal, insert or replace; not operator-pending ("no…"), visual or the command line.
  return (mode:sub(1, 1) == "n" and mode:sub(1, 2) ~= "no") or mode:sub(1, 1) == "i"
    or mode:sub(1, 1) == "R"
end

--- Ask the server for the next edit at the cursor of the state's buffer (the current one).
---@param state lsp_infer.NextEditState
function M.request(state)
  local bufnr = state.bufnr
  if not enabled() or api.nvim_get_current_buf() ~= bufnr or not askable_mode() then
    return
  end
  local client = vim.lsp.get_client_by_id(state.client_id) or util.client(bufnr)
  local version = version_of(bufnr)
  if not client or client.name ~= util.name or server_off(client) or not version then
    return
  end
  cancel_inflight(state)
  local encoding = client.offset_encoding or "utf-16"
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr), version = version },
    position = vim.lsp.util.make_position_params(0, encoding).position,
  }
  local seq = state.seq
  local ok, id = util.request(client, M.METHOD, params, function(err, result)
    if seq ~= state.seq then
      return -- a newer edit came: cancelled (or answered too late)
    end
    state.inflight = nil
    if err or M.states[bufnr] ~= state or not api.nvim_buf_is_valid(bufnr)
        or api.nvim_get_current_buf() ~= bufnr or version_of(bufnr) ~= version then
      return -- failed (the server logs why), or the user typed on or left
    end
    local answer = M.parse(result, version)
    if not answer then
      return
    end
    clear(state, M.DID_REJECT) -- a newer suggestion replaces one still shown
    ---@type lsp_infer.NextEdit
    local shown = vim.tbl_extend("force", answer, { client_id = client.id, encoding = encoding,
      version = version })
    if render(state, shown) then
      state.shown = shown
      tell(shown, M.DID_SHOW)
    else
      api.nvim_buf_clear_namespace(bufnr, M.namespace, 0, -1) -- not drawn: never shown
    end
  end, bufnr)
  if ok and id then
    state.inflight = { client_id = client.id, id = id }
  end
end

--- After an edit: the suggestion on screen is stale (rejected), the request in flight is for
--- an older version (cancelled), and a new one goes after the pause.
local function edited(state)
  -- The document version, not b:changedtick: what the server's answers are for, and it does
  -- not move without a change of the text.
  local version = version_of(state.bufnr)
  if version == state.seen then
    return -- the same change again (TextChanged on leaving insert mode after TextChangedI)
  end
  state.seen = version
  if state.shown and state.shown.version ~= version then
    clear(state, M.DID_REJECT)
  end
  cancel_inflight(state)
  if not enabled() then
    return
  end
  if not state.timer then
    state.timer = uv.new_timer()
  end
  state.timer:stop()
  state.timer:start(options().debounce_ms, 0, vim.schedule_wrap(function()
    if M.states[state.bufnr] == state and api.nvim_buf_is_valid(state.bufnr)
        and version_of(state.bufnr) == version then
      M.request(state)
    end
  end))
end

--- The state of the current buffer when a suggestion is on screen in it.
local function current()
  local state = M.states[api.nvim_get_current_buf()]
  if state and state.shown then
    return state
  end
end

--- Whether a next-edit suggestion is on screen in the current buffer.
---@return boolean
function M.visible()
  return current() ~= nil
end

--- The suggestion on screen in the current buffer (a copy), if any: {id, kind, label,
--- version, edits}.
---@return table?
function M.shown()
  local state = current()
  return state and vim.deepcopy(state.shown)
end

--- Go to the suggestion, or apply it when the cursor is on its first line (now, not in an
--- <expr> mapping: see M.accept).
local function go_or_apply(state)
  local shown = state.shown
  if not shown or M.states[state.bufnr] ~= state or api.nvim_get_current_buf() ~= state.bufnr then
    return
  end
  if version_of(state.bufnr) ~= shown.version then
    clear(state, M.DID_REJECT) -- changed behind our back: never applied to another version
    return
  end
  local row, col = first_place(state, shown)
  if api.nvim_win_get_cursor(0)[1] - 1 ~= row then
    vim.cmd("normal! m'") -- <C-o> comes back
    api.nvim_win_set_cursor(0, { row + 1, col })
    render(state, shown) -- the hint goes: the edit is on screen now
    return
  end
  stop_timer(state)
  cancel_inflight(state)
  clear(state) -- before the edit, whose TextChanged must not reject it
  local text_edits = {}
  for _, edit in ipairs(shown.edits) do
    -- A copy: apply_text_edits sorts and normalizes what it is given.
    table.insert(text_edits, { range = vim.deepcopy(edit.range), newText = edit.text })
  end
  -- One call: one undo step for the whole group.
  vim.lsp.util.apply_text_edits(text_edits, state.bufnr, shown.encoding)
  tell(shown, M.DID_ACCEPT)
end

--- The accept key: go to the suggested edit when the cursor is not on its first line, else
--- apply the whole group. Returns false (and does nothing) when none is shown, so a mapping can
--- fall back to the key's usual meaning. Safe inside <expr> mappings: it acts on the next tick.
---@return boolean
function M.accept()
  local state = current()
  if not state then
    return false
  end
  vim.schedule(function()
    go_or_apply(state)
  end)
  return true
end

--- Take the suggestion away (the server hears it was rejected). Returns false when none is
--- shown.
---@return boolean
function M.dismiss()
  local state = current()
  if not state then
    return false
  end
  stop_timer(state)
  cancel_inflight(state)
  clear(state, M.DID_REJECT)
  return true
end

--- Normal-mode keys, buffer-local: each acts while a suggestion is shown and otherwise does
--- what the key did before (<Tab> is still <C-i>, <Esc> the user's own mapping). Insert mode
--- is left alone: its <Tab> accepts ghost text (init.lua).
local function set_keymaps(state)
  local keymaps = options().keymaps
  if config.options.keymaps == false or type(keymaps) ~= "table" then
    return
  end
  local actions = {
    accept = { M.accept, "lsp-infer: go to the next edit, then apply it" },
    dismiss = { M.dismiss, "lsp-infer: dismiss the next edit" },
  }
  for name, action in pairs(actions) do
    local lhs = keymaps[name]
    if type(lhs) == "string" and lhs ~= "" then
      local previous = util.buffer_mapping("n", lhs)
      vim.keymap.set("n", lhs, function()
        if action[1]() then
          return ""
        end
        return util.previous_action("n", lhs, previous)
      end, { buffer = state.bufnr, expr = true, replace_keycodes = true, silent = true,
        desc = action[2] })
      table.insert(state.keys, lhs)
    end
  end
end

--- Ask for next edits in `bufnr` (attached to lsp-infer client `client_id`).
---@param bufnr integer
---@param client_id integer
function M.attach(bufnr, client_id)
  if M.states[bufnr] then
    M.states[bufnr].client_id = client_id
    return
  end
  if not enabled() then
    return
  end
  define_highlights()
  local augroup = api.nvim_create_augroup("lsp_infer.next_edit." .. bufnr, { clear = true })
  ---@type lsp_infer.NextEditState
  local state = { bufnr = bufnr, client_id = client_id, augroup = augroup, seq = 0,
    seen = version_of(bufnr), keys = {} }
  M.states[bufnr] = state
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI", "TextChangedP" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      edited(state)
    end,
  })
  -- The hint follows the cursor and the view (the first edit may come on screen).
  api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI", "WinScrolled" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      local shown = state.shown
      if shown and api.nvim_get_current_buf() == bufnr and version_of(bufnr) == shown.version then
        render(state, shown) -- (an edit moved it: TextChanged rejects it next)
      end
    end,
  })
  api.nvim_create_autocmd("BufLeave", {
    group = augroup,
    buffer = bufnr,
    callback = function()
      stop_timer(state)
      cancel_inflight(state)
      clear(state, M.DID_REJECT)
    end,
  })
  api.nvim_create_autocmd({ "BufUnload", "BufWipeout" }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      M.detach(bufnr)
    end,
  })
  api.nvim_create_autocmd("ColorScheme", { group = augroup, callback = define_highlights })
  set_keymaps(state)
end

---@param bufnr integer
function M.detach(bufnr)
  local state = M.states[bufnr]
  if not state then
    return
  end
  M.states[bufnr] = nil
  cancel_inflight(state)
  clear(state, M.DID_REJECT)
  state.timer = util.close_timer(state.timer)
  pcall(api.nvim_del_augroup_by_id, state.augroup)
  if api.nvim_buf_is_valid(bufnr) then
    for _, lhs in ipairs(state.keys) do
      pcall(vim.keymap.del, "n", lhs, { buffer = bufnr })
    end
  end
end

return M
