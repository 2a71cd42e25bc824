-- lspInfer/definitions: the server asks where names near the cursor are defined, and the plugin
-- asks the other language servers attached to the buffer (pyright, jedi, gopls, …) with
-- textDocument/definition, then answers with the first location and the target's text from its
-- line on (docs/protocol.md). The server puts the signatures and docstrings in its prompts.
--
-- Announced in the client's capabilities (experimental.lspInfer.definitions, built by
-- config.lua's capabilities()) when the `definitions` option is on. The handler never blocks
-- the UI: Neovim (0.11+, rpc.lua's handle_body) runs a server request's handler inside
-- `vim.schedule(coroutine.wrap(...))`, so it yields until the answers are in and the runtime
-- sends what it returns. Outside a coroutine (older runtimes) it waits with vim.wait, bounded
-- by the same timeout (util.await; the requests themselves: util.fan_out).
--
-- Every position gets an entry: a definition, or vim.NIL (JSON null) where nothing was found,
-- a server failed or answered garbage, the buffer went away or the time (definitions_timeout_ms)
-- ran out. Nothing here raises out of the handler.
local config = require("lsp_infer.config")
local util = require("lsp_infer.util")

local M = {}

local api = vim.api
local has_011 = vim.fn.has("nvim-0.11") == 1

M.METHOD = "lspInfer/definitions"
M.DEFINITION = "textDocument/definition"
M.MAX_LINES = 60 -- of the target's text, from range.start.line
M.MAX_CHARS = 8000 -- Unicode code points of it
M.ABOVE_LINES = 10 -- lines sent from above the definition's line (doc comments, decorators)
-- A definition on a file's first line is most often the file itself (a module imported whole):
-- sent up to these, so that the server's outline of it reaches its last definitions.
M.MODULE_MAX_LINES = 5000
M.MODULE_MAX_CHARS = 200000
M.MAX_POSITIONS = 32 -- asked per request (the server sends at most 8); the rest get null
local CHUNK = 16384 -- bytes read from a file at a time
local MAX_SCAN = 32 * 1024 * 1024 -- a start line further into a file than this is not looked for

--- The lines and characters sent of a definition starting on `line` (0-based).
---@param line integer
---@return integer, integer
function M.bounds(line)
  if line == 0 then
    return M.MODULE_MAX_LINES, M.MODULE_MAX_CHARS
  end
  return M.MAX_LINES, M.MAX_CHARS
end

-- -- positions ------------------------------------------------------------------------------

local function valid_encoding(encoding)
  return (encoding == "utf-8" or encoding == "utf-32") and encoding or "utf-16"
end

--- The byte column of `character` (counted in `encoding`) in `line`, clamped to the line (as the
--- spec says for a character past its end).
---@param line string
---@param character integer
---@param encoding string "utf-8", "utf-16" or "utf-32"
---@return integer
function M.byte_col(line, character, encoding)
  encoding = valid_encoding(encoding)
  if character <= 0 then
    return 0
  end
  local ok, col
  if has_011 then
    ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  elseif encoding == "utf-8" then
    ok, col = true, character
  else
    ok, col = pcall(vim.str_byteindex, line, character, encoding == "utf-16")
  end
  if not ok or type(col) ~= "number" then
    return #line
  end
  return math.min(col, #line)
end

--- The character (counted in `encoding`) at byte column `col` of `line`.
---@param line string
---@param col integer
---@param encoding string
---@return integer
function M.character(line, col, encoding)
  encoding = valid_encoding(encoding)
  col = math.max(0, math.min(col, #line))
  if encoding == "utf-8" then
    return col
  end
  if has_011 then
    local ok, character = pcall(vim.str_utfindex, line, encoding, col, false)
    return ok and character or col
  end
  local ok, utf32, utf16 = pcall(vim.str_utfindex, line, col)
  if not ok then
    return col
  end
  return encoding == "utf-16" and utf16 or utf32
end

--- `character` of `line`, from one position encoding to another.
---@param line string
---@param character integer
---@param from string
---@param to string
---@return integer
function M.convert(line, character, from, to)
  return M.character(line, M.byte_col(line, character, from), to)
end

-- -- the target's text ----------------------------------------------------------------------

--- `count` lines from line `first` (0-based) of a file, without reading more of it than that
--- needs (and at most the bytes of `max_chars` characters, 4 each, and `count` line ends from the
--- start of line `first`: enough for the cut); nil when the file cannot
--- be read or has no line `first`.
---@param path string
---@param first integer
---@param count integer
---@param max_chars integer? MAX_CHARS unless given
---@return string[]?
function M.read_file(path, first, count, max_chars)
  local limit = 4 * (max_chars or M.MAX_CHARS) + 4 * count
  local file = io.open(path, "rb")
  if not file then
    return nil
  end
  local ok, tail = pcall(function()
    local line, scanned, tail = 0, 0, nil
    while true do
      local chunk = file:read(CHUNK)
      if not chunk then
        return tail
      end
      scanned = scanned + #chunk
      if tail then
        tail = tail .. chunk
      else
        local pos = 1
        while line < first do
          local newline = chunk:find("\n", pos, true)
          if not newline then
            break
          end
          line, pos = line + 1, newline + 1
        end
        if line == first then
          tail = chunk:sub(pos)
        elseif scanned > MAX_SCAN then
          return nil
        end
      end
      if tail and (#tail >= limit or select(2, tail:gsub("\n", "")) >= count) then
        return tail
      end
    end
  end)
  file:close()
  if not ok or type(tail) ~= "string" or tail == "" then
    return nil
  end
  local body = tail:sub(1, limit)
  if body:sub(-1) ~= "\n" then
    body = body .. "\n" -- the last line has no newline (or was cut)
  end
  local lines = {}
  for text in body:gmatch("([^\n]*)\n") do
    if #lines >= count then
      break
    end
    table.insert(lines, (text:gsub("\r$", "")))
  end
  return lines
end

--- The loaded buffer showing `uri`, if any.
---@param uri string
---@return integer?
function M.loaded_buffer(uri)
  local fname = uri:match("^file:") and vim.fs.normalize(vim.uri_to_fname(uri)) or nil
  for _, bufnr in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(bufnr) then
      local name = api.nvim_buf_get_name(bufnr)
      if name ~= "" and (vim.uri_from_bufnr(bufnr) == uri
          or (fname and vim.fs.normalize(name) == fname)) then
        return bufnr
      end
    end
  end
end

--- `count` lines of `uri` from line `first`: the editor's copy when the file is loaded, else the
--- file on disk (file: URIs only).
---@param uri string
---@param first integer
---@param count integer
---@param max_chars integer? of the file's text, for a file read from disk (MAX_CHARS)
---@return string[]?
function M.read(uri, first, count, max_chars)
  local bufnr = M.loaded_buffer(uri)
  if bufnr then
    local lines = api.nvim_buf_get_lines(bufnr, first, first + count, false)
    return #lines > 0 and lines or nil
  end
  if not uri:match("^file:") then
    return nil
  end
  return M.read_file(vim.uri_to_fname(uri), first, count, max_chars)
end

--- The text an answer carries: at most `max_lines` lines (MAX_LINES), then at most `max_chars`
--- characters (MAX_CHARS; code points, as the server counts them).
---@param lines string[]
---@param max_lines integer?
---@param max_chars integer?
---@return string
function M.cut(lines, max_lines, max_chars)
  max_lines, max_chars = max_lines or M.MAX_LINES, max_chars or M.MAX_CHARS
  local text = table.concat(lines, "\n", 1, math.min(#lines, max_lines))
  local chars = 0
  for i = 1, #text do
    local byte = text:byte(i)
    if byte < 0x80 or byte >= 0xC0 then -- not a continuation byte: a character starts here
      chars = chars + 1
      if chars > max_chars then
        return text:sub(1, i - 1)
      end
    end
  end
  return text
end

-- -- one answer -----------------------------------------------------------------------------

--- Whether `value` is an LSP position (a line and a character, neither negative).
---@param value any
---@return boolean
function M.is_position(value)
  return type(value) == "table" and type(value.line) == "number"
    and type(value.character) == "number" and value.line >= 0 and value.character >= 0
    and value.line == math.floor(value.line)
end

--- The first location of a textDocument/definition result (Location, Location[] or
--- LocationLink[]): its uri and range, or nil.
---@param result any
---@return string?, table?
function M.first_location(result)
  if type(result) ~= "table" then
    return nil
  end
  local location = result
  if result.uri == nil and result.targetUri == nil then
    location = result[1]
  end
  if type(location) ~= "table" then
    return nil
  end
  local uri = location.targetUri or location.uri
  local range = location.targetSelectionRange or location.targetRange or location.range
  if type(uri) ~= "string" or uri == "" or type(range) ~= "table"
      or not M.is_position(range.start) or not M.is_position(range["end"]) then
    return nil
  end
  return uri, range
end

--- An entry of the answer for a textDocument/definition result from a server using position
--- encoding `from`, in lsp-infer's encoding `to`; nil when it has no readable location.
---@param result any
---@param from string
---@param to string
---@return table?
function M.entry(result, from, to)
  local uri, range = M.first_location(result)
  if not uri or not range then
    return nil
  end
  local first = range.start.line
  local from = math.max(0, first - M.ABOVE_LINES)
  local max_lines, max_chars = M.bounds(first)
  local read = M.read(uri, from, max_lines + first - from, max_chars)
  if not read or #read <= first - from then
    return nil
  end
  local above = table.concat(read, "\n", 1, first - from)
  local lines = vim.list_slice(read, first - from + 1)
  local start_line, finish = lines[1], range["end"]
  local end_line = finish.line >= first and lines[finish.line - first + 1] or nil
  return {
    uri = uri,
    range = {
      start = { line = first, character = M.convert(start_line, range.start.character, from, to) },
      ["end"] = {
        line = finish.line,
        character = end_line and M.convert(end_line, finish.character, from, to)
          or finish.character,
      },
    },
    text = M.cut(lines, max_lines, max_chars),
    above = above ~= "" and above:sub(1, M.MAX_CHARS) or nil,
  }
end

--- The clients that can be asked `method` (textDocument/definition unless given) for `bufnr`:
--- attached, not lsp-infer, supporting it (a definitionProvider, a referencesProvider, …).
---@param bufnr integer
---@param except integer lsp-infer's client id
---@param method string?
---@return vim.lsp.Client[]
function M.other_clients(bufnr, except, method)
  method = method or M.DEFINITION
  local out = {}
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
    if client.id ~= except and client.name ~= util.name then
      local ok, supported
      if has_011 then
        ok, supported = pcall(client.supports_method, client, method, bufnr)
      else
        ok, supported = pcall(client.supports_method, method, { bufnr = bufnr })
      end
      if ok and supported then
        table.insert(out, client)
      end
    end
  end
  return out
end

--- The loaded buffer attached to client `client_id` that shows `uri`.
---@param client_id integer
---@param uri string
---@return integer?
function M.attached_buffer(client_id, uri)
  for _, bufnr in ipairs(vim.lsp.get_buffers_by_client_id(client_id)) do
    if api.nvim_buf_is_loaded(bufnr) and vim.uri_from_bufnr(bufnr) == uri then
      return bufnr
    end
  end
end

local function nulls(count)
  local out = {}
  for i = 1, count do
    out[i] = vim.NIL
  end
  return out
end

--- Ask the other clients for each position of `params` (an lspInfer/definitions request from
--- client `client_id`) and call `done(definitions)` once: every position answered or given
--- up, or after `timeout_ms` with what is in by then (the requests still out are cancelled).
--- `done` may be called before this returns (nothing to ask).
---@param params any
---@param client_id integer
---@param timeout_ms integer
---@param done fun(definitions: any[])
function M.resolve(params, client_id, timeout_ms, done)
  local positions = type(params) == "table" and type(params.positions) == "table"
    and params.positions or {}
  local count = #positions
  local answers = nulls(count)
  local left = {} ---@type table<integer, integer> requests out per position

  local requests = util.fan_out(function()
    for i = 1, count do
      if answers[i] == vim.NIL and (left[i] or 0) > 0 then
        return false
      end
    end
    return true
  end, function()
    done(answers)
  end)

  local uri = type(params) == "table" and type(params.textDocument) == "table"
    and params.textDocument.uri
  local infer = vim.lsp.get_client_by_id(client_id)
  local bufnr = infer and type(uri) == "string" and M.attached_buffer(client_id, uri)
  if not infer or not bufnr then
    return requests:finish()
  end
  local others = M.other_clients(bufnr, client_id)
  local encoding = infer.offset_encoding or "utf-16"

  for i = 1, math.min(count, M.MAX_POSITIONS) do
    local position = positions[i]
    local line = M.is_position(position)
      and api.nvim_buf_get_lines(bufnr, position.line, position.line + 1, false)[1]
    if line then
      local col = M.byte_col(line, position.character, encoding)
      for _, client in ipairs(others) do
        local request = {
          textDocument = { uri = uri },
          position = { line = position.line,
            character = M.character(line, col, client.offset_encoding or "utf-16") },
        }
        -- Counted before it is sent: an in-process server may answer inside the call.
        left[i] = (left[i] or 0) + 1
        requests:request(client, M.DEFINITION, request, bufnr, function(err, result)
          left[i] = left[i] - 1
          if err == nil and answers[i] == vim.NIL then
            local read, entry = pcall(M.entry, result, client.offset_encoding or "utf-16",
              encoding)
            if read and entry then
              answers[i] = entry
            end
          end
        end)
      end
    end
  end
  requests:wait(timeout_ms)
end

--- The handler of lspInfer/definitions (the client config's `handlers`).
---@param params any
---@param ctx {client_id: integer}
---@return table
function M.handler(_, params, ctx)
  local positions = type(params) == "table" and type(params.positions) == "table"
    and params.positions or {}
  if config.options.definitions == false or #positions == 0 then
    return { definitions = {} }
  end
  local timeout = tonumber(config.options.definitions_timeout_ms) or 1000
  local answer = util.await(M.METHOD, timeout, function(done)
    M.resolve(params, ctx and ctx.client_id or -1, timeout, done)
  end)
  return { definitions = answer or nulls(#positions) }
end

return M
