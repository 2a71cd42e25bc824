-- lspInfer/references: the server asks where the name at a position is used in that same
-- document (docs/protocol.md), before the user edits it: it sends the request when the cursor
-- comes to rest on a name (after lspInfer/warm), and offers the rest of a rename there as a next
-- edit. The plugin asks the other language servers attached to the buffer (pyright, jedi, gopls,
-- …) with textDocument/references (the declaration included), keeps the locations in that
-- document, and answers with their ranges, merged and deduplicated, in lsp-infer's position
-- encoding.
--
-- Announced in the client's capabilities (experimental.lspInfer.references, built by
-- config.lua's capabilities()) when next edits are on (`next_edit.enabled` not false). The
-- handler never blocks the UI: it yields inside the coroutine Neovim runs it in, like
-- definitions.lua's (util.await, util.fan_out).
--
-- The answer is null (vim.NIL) when the buffer is not loaded, when its document version is not
-- the one asked about when the language servers are asked (their ranges would be another
-- text's), when no other attached server has a references provider, when they all fail or
-- answer garbage, or when none answered within next_edit.references_timeout_ms. Nothing here
-- raises out of the handler.
local config = require("lsp_infer.config")
local definitions = require("lsp_infer.definitions")
local util = require("lsp_infer.util")

local M = {}

local api = vim.api

M.METHOD = "lspInfer/references"
M.REFERENCES = "textDocument/references"
M.TIMEOUT_MS = 3000 -- next_edit.references_timeout_ms unless set

-- -- one answer -----------------------------------------------------------------------------

--- Whether `a` and `b` name the same document (file: URIs compared by their paths, as servers
--- spell them differently: percent-encoding, a drive letter's case).
---@param a string
---@param b string
---@return boolean
function M.same_document(a, b)
  if a == b then
    return true
  end
  if not (a:match("^file:") and b:match("^file:")) then
    return false
  end
  local ok, same = pcall(function()
    return vim.fs.normalize(vim.uri_to_fname(a)) == vim.fs.normalize(vim.uri_to_fname(b))
  end)
  return ok and same == true
end

--- A range from a server using position encoding `from`, in encoding `to`, with `lines` the
--- document's text at the version asked about (nil: the same encoding, nothing to convert); nil
--- when it is not a range or its lines are not in the document.
---@param range any
---@param from string
---@param to string
---@param lines string[]?
---@return table?
function M.convert_range(range, from, to, lines)
  if type(range) ~= "table" or not definitions.is_position(range.start)
      or not definitions.is_position(range["end"]) then
    return nil
  end
  local out = {}
  for _, side in ipairs({ "start", "end" }) do
    local position = range[side]
    local character = position.character
    if lines then
      local line = lines[position.line + 1]
      if not line then
        return nil
      end
      character = definitions.convert(line, character, from, to)
    end
    out[side] = { line = position.line, character = character }
  end
  return out
end

--- The ranges in document `uri` of a textDocument/references result (Location[], one Location,
--- or null: none) from a server using encoding `from`, in encoding `to` (see convert_range);
--- nil when the result is none of these.
---@param result any
---@param uri string
---@param from string
---@param to string
---@param lines string[]?
---@return table[]?
function M.ranges(result, uri, from, to, lines)
  if result == nil or result == vim.NIL then
    return {}
  end
  if type(result) ~= "table" then
    return nil
  end
  if result.uri ~= nil then
    result = { result } -- one Location, not a list
  end
  local out = {}
  for _, location in ipairs(result) do
    if type(location) == "table" and type(location.uri) == "string"
        and M.same_document(location.uri, uri) then
      local range = M.convert_range(location.range, from, to, lines)
      if range then
        table.insert(out, range)
      end
    end
  end
  return out
end

--- `ranges` without duplicates, in document order.
---@param ranges table[]
---@return table[]
function M.merge(ranges)
  local seen, out = {}, {}
  for _, range in ipairs(ranges) do
    local s, e = range.start, range["end"]
    local key = ("%d:%d:%d:%d"):format(s.line, s.character, e.line, e.character)
    if not seen[key] then
      seen[key] = true
      table.insert(out, range)
    end
  end
  table.sort(out, function(a, b)
    if a.start.line ~= b.start.line then
      return a.start.line < b.start.line
    end
    if a.start.character ~= b.start.character then
      return a.start.character < b.start.character
    end
    if a["end"].line ~= b["end"].line then
      return a["end"].line < b["end"].line
    end
    return a["end"].character < b["end"].character
  end)
  return out
end

-- -- asking ---------------------------------------------------------------------------------

--- Ask the other clients where the name at `params.position` (an lspInfer/references request
--- from client `client_id`) is referenced, and call `done(ranges)` once: every server answered,
--- or after `timeout_ms` with what is in by then (the requests still out are cancelled); nil
--- when there is nothing to answer (see the top of this file). `done` may be called before this
--- returns.
---@param params any
---@param client_id integer
---@param timeout_ms integer
---@param done fun(ranges: table[]?)
function M.resolve(params, client_id, timeout_ms, done)
  local document = type(params) == "table" and params.textDocument
  local uri = type(document) == "table" and document.uri
  local version = type(document) == "table" and document.version
  local position = type(params) == "table" and params.position
  local infer = vim.lsp.get_client_by_id(client_id)
  local bufnr = infer and type(uri) == "string" and definitions.attached_buffer(client_id, uri)
  if not bufnr or type(version) ~= "number" or util.version(bufnr) ~= version
      or not definitions.is_position(position) then
    return done(nil)
  end
  local line = api.nvim_buf_get_lines(bufnr, position.line, position.line + 1, false)[1]
  local others = definitions.other_clients(bufnr, client_id, M.REFERENCES)
  if not line or #others == 0 then
    return done(nil)
  end
  local encoding = infer.offset_encoding or "utf-16"
  local col = definitions.byte_col(line, position.character, encoding)
  -- The text at `version`, to convert the answers' ranges with should the buffer change before
  -- they come: taken only when a server's encoding is not lsp-infer's.
  local lines ---@type string[]?
  for _, client in ipairs(others) do
    if (client.offset_encoding or "utf-16") ~= encoding then
      lines = api.nvim_buf_get_lines(bufnr, 0, -1, false)
      break
    end
  end

  local found, answered, left = {}, false, #others
  local requests = util.fan_out(function()
    return left == 0
  end, function()
    done(answered and M.merge(found) or nil)
  end)
  for _, client in ipairs(others) do
    local from = client.offset_encoding or "utf-16"
    local request = {
      textDocument = { uri = uri },
      position = { line = position.line, character = definitions.character(line, col, from) },
      context = { includeDeclaration = true },
    }
    requests:request(client, M.REFERENCES, request, bufnr, function(err, result)
      left = left - 1
      if err == nil then
        local ok, ranges = pcall(M.ranges, result, uri, from, encoding,
          from ~= encoding and lines or nil)
        if ok and ranges then
          answered = true
          vim.list_extend(found, ranges)
        end
      end
    end)
  end
  requests:wait(timeout_ms)
end

--- The longest the plugin waits for the language servers (next_edit.references_timeout_ms).
---@return integer
function M.timeout_ms()
  local next_edit = config.options.next_edit
  return tonumber(type(next_edit) == "table" and next_edit.references_timeout_ms) or M.TIMEOUT_MS
end

--- The handler of lspInfer/references (the client config's `handlers`).
---@param params any
---@param ctx {client_id: integer}
---@return table|vim.NIL
function M.handler(_, params, ctx)
  local next_edit = config.options.next_edit
  if type(next_edit) == "table" and next_edit.enabled == false then
    return vim.NIL
  end
  local timeout = M.timeout_ms()
  local ranges = util.await(M.METHOD, timeout, function(done)
    M.resolve(params, ctx and ctx.client_id or -1, timeout, done)
  end)
  if type(ranges) ~= "table" then
    return vim.NIL
  end
  return { references = ranges }
end

return M
