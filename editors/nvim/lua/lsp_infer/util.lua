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

--- Cancel the request a module keeps in `state.inflight` ({client_id, id}), if any, and
--- forget it.
function M.cancel_inflight(state)
  local inflight = state.inflight
  state.inflight = nil
  if inflight then
    local client = vim.lsp.get_client_by_id(inflight.client_id)
    if client then
      pcall(M.cancel, client, inflight.id)
    end
  end
end

--- Stop and close a libuv timer (nil: nothing to do); returns nil, for `t = close_timer(t)`.
---@param timer? uv.uv_timer_t
---@return nil
function M.close_timer(timer)
  if timer then
    timer:stop()
    if not timer:is_closing() then
      timer:close()
    end
  end
  return nil
end

--- The buffer's document version as the lsp-infer client last heard it: the runtime's count
--- (vim.lsp.util.buf_versions: the b:changedtick of its last didChange, 0 at didOpen), kept per
--- buffer (0.11 and 0.12 checked).
---@param bufnr integer
---@return integer?
function M.version(bufnr)
  local versions = vim.lsp.util.buf_versions
  return type(versions) == "table" and versions[bufnr] or nil
end

-- -- answering a server's request from other language servers -------------------------------

--- Run `start(done)`, which calls `done(value)` once, now or later, and return that value; nil
--- when `start` raised or `timeout_ms` (and 200 ms more) ran out first. For the handler of a
--- request from the server: Neovim (0.11+, rpc.lua's handle_body) runs it inside
--- `vim.schedule(coroutine.wrap(...))`, so it yields until `done` and the runtime sends what the
--- handler returns; outside a coroutine (older runtimes) it waits with vim.wait. `label` names
--- the request in the LSP log should resuming fail.
---@param label string
---@param timeout_ms integer
---@param start fun(done: fun(value: any))
---@return any
function M.await(label, timeout_ms, start)
  local co = coroutine.running()
  local yieldable = co ~= nil and coroutine.isyieldable ~= nil and coroutine.isyieldable()
  local answer, got, waiting = nil, false, false
  local function done(value)
    if got then
      return
    end
    got, answer = true, value
    if waiting then
      vim.schedule(function()
        local ok, why = coroutine.resume(co)
        if not ok then
          require("vim.lsp.log").error(("lsp-infer: %s: %s"):format(label, tostring(why)))
        end
      end)
    end
  end
  if not pcall(start, done) then
    done(nil)
  end
  if not got then
    if yieldable then
      waiting = true
      coroutine.yield()
    else
      vim.wait(timeout_ms + 200, function()
        return got
      end, 10)
    end
  end
  return answer
end

---@class lsp_infer.FanOut
---@field finished boolean
---@field private sending boolean
---@field private settled fun(): boolean
---@field private done fun()
---@field private timer uv.uv_timer_t?
---@field private outstanding table<string, {client: vim.lsp.Client, id: integer}>
local FanOut = {}
FanOut.__index = FanOut

--- Requests to several language servers that end together: `done()` is called once, when
--- `settled()` holds after a reply (or after the last request is sent, see :wait), or when the
--- time runs out; the requests still out are cancelled then.
---@param settled fun(): boolean
---@param done fun()
---@return lsp_infer.FanOut
function M.fan_out(settled, done)
  return setmetatable({ finished = false, sending = true, settled = settled, done = done,
    outstanding = {} }, FanOut)
end

--- End it now (once): cancel what is still out, then `done()`.
function FanOut:finish()
  if self.finished then
    return
  end
  self.finished = true
  self.timer = M.close_timer(self.timer)
  for _, request in pairs(self.outstanding) do
    pcall(M.cancel, request.client, request.id)
  end
  self.outstanding = {}
  self.done()
end

--- Send one request; `on_reply(err, result)` is called at most once, unless it has finished
--- (a request that could not be sent: an error). Checks `settled()` after it, but not before
--- :wait (an in-process server may answer inside the call, before the rest are sent).
---@param client vim.lsp.Client
---@param method string
---@param params table
---@param bufnr integer
---@param on_reply fun(err: any, result: any)
function FanOut:request(client, method, params, bufnr, on_reply)
  local key, replied = nil, false
  local function reply(err, result)
    if replied then
      return
    end
    replied = true
    if key then
      self.outstanding[key] = nil
    end
    if self.finished then
      return
    end
    on_reply(err, result)
    if not self.sending and self.settled() then
      self:finish()
    end
  end
  local called, sent, id = pcall(M.request, client, method, params, reply, bufnr)
  if not (called and sent) then
    reply({ code = -32603, message = "not sent" }, nil)
  elseif type(id) == "number" and not replied then
    key = ("%d:%d"):format(client.id, id)
    self.outstanding[key] = { client = client, id = id }
  end
end

--- Everything is sent: finish now if settled, else within `timeout_ms`.
---@param timeout_ms integer
function FanOut:wait(timeout_ms)
  self.sending = false
  if self.finished then
    return
  end
  if self.settled() then
    return self:finish()
  end
  self.timer = (vim.uv or vim.loop).new_timer()
  self.timer:start(math.max(timeout_ms, 0), 0, vim.schedule_wrap(function()
    self:finish()
  end))
end

--- Text as virtual text can show it: tabs as the buffer's tabstop of spaces.
---@param text string
---@return string
function M.display(text)
  local spaces = string.rep(" ", vim.bo.tabstop > 0 and vim.bo.tabstop or 8)
  return (text:gsub("\t", spaces))
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

--- Byte column of an LSP character offset in `line` for a position encoding (utf-8, utf-16 or
--- utf-32); an offset past the end is the line's length.
---@param line string
---@param character integer
---@param encoding string
---@return integer
function M.byte_col(line, character, encoding)
  if encoding == "utf-8" then
    return math.min(character, #line)
  end
  local units, i = 0, 1
  while i <= #line and units < character do
    local byte = line:byte(i)
    local len = byte >= 0xF0 and 4 or byte >= 0xE0 and 3 or byte >= 0xC0 and 2 or 1
    units = units + ((encoding == "utf-16" and len == 4) and 2 or 1)
    i = i + len
  end
  return math.min(i - 1, #line)
end

-- -- keys that act only while something is shown -------------------------------------------

--- The buffer's own mapping of `lhs` in `mode` before ours (to fall back on), or nil when there
--- is none or it is one of ours.
---@param mode string
---@param lhs string
---@return table?
function M.buffer_mapping(mode, lhs)
  local previous = vim.fn.maparg(lhs, mode, false, true)
  if type(previous) ~= "table" or previous.buffer ~= 1
      or (previous.desc or ""):find("lsp-infer", 1, true) then
    return nil -- not the buffer's own (the global one is looked up when pressed)
  end
  return previous
end

--- The global mapping of a key in `mode` now (e.g. Neovim 0.12's insert-mode <Tab> for
--- vim.snippet, or the user's own), or nil.
local function global_mapping(mode, lhs)
  local raw = vim.api.nvim_replace_termcodes(lhs, true, true, true)
  local canonical = vim.fn.keytrans(raw)
  for _, map in ipairs(vim.api.nvim_get_keymap(mode)) do
    if map.lhsraw == raw or map.lhs == canonical then
      return map
    end
  end
end

--- What a key does when our action does not apply: the previous mapping's result, else the key
--- itself. Runs inside our <expr> mapping (textlock): a non-<expr> Lua mapping runs on the next
--- tick, a non-<expr> key mapping is fed back as keys.
---@param mode string
---@param lhs string
---@param previous? table the buffer's own mapping captured when ours was set
---@return string keys for the <expr> mapping to return
function M.previous_action(mode, lhs, previous)
  local map = previous or global_mapping(mode, lhs)
  if not map then
    return lhs
  end
  if map.callback then
    if map.expr == 1 then
      local ok, result = pcall(map.callback)
      return ok and type(result) == "string" and result or ""
    end
    vim.schedule(map.callback)
    return ""
  end
  local rhs = map.rhs or ""
  if map.expr == 1 then
    local ok, result = pcall(vim.api.nvim_eval, rhs)
    return ok and type(result) == "string" and result or ""
  end
  local keys = vim.api.nvim_replace_termcodes(rhs, true, true, true)
  vim.api.nvim_feedkeys(keys, map.noremap == 1 and "n" or "m", false)
  return ""
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
