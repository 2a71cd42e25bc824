-- An in-process language server that only answers textDocument/definition (a `cmd` function,
-- see :help vim.lsp.rpc), standing beside the stub lsp-infer (stub_server.lua) for fast checks
-- of the plugin's lspInfer/definitions. It negotiates `encoding` (utf-8 unless set before it
-- starts), records every definition request and every $/cancelRequest, and answers each
-- request with `answer(params)` → result, delay_ms: the result ("error" for a JSON-RPC error)
-- after delay_ms, or never when delay_ms is nil.
local M = {
  encoding = "utf-8",
  requests = {}, -- the params of each textDocument/definition, in arrival order
  cancelled = {}, -- request ids the client cancelled
}

function M.answer(_)
  return vim.NIL, 0
end

function M.cmd(dispatchers)
  local closing, next_id = false, 0
  local pending = {} -- id -> true while unanswered
  return {
    request = function(method, params, callback, notify_reply_callback)
      next_id = next_id + 1
      local id = next_id
      pending[id] = true
      local function reply(err, result)
        if not pending[id] then
          return
        end
        pending[id] = nil
        callback(err, result)
        if notify_reply_callback then
          notify_reply_callback(id)
        end
      end
      if method == "initialize" then
        reply(nil, {
          capabilities = { definitionProvider = true, textDocumentSync = 1,
            positionEncoding = M.encoding },
          serverInfo = { name = "definitions", version = "0" },
        })
      elseif method == "textDocument/definition" then
        table.insert(M.requests, params)
        local result, delay = M.answer(params)
        if delay then
          vim.defer_fn(function()
            if result == "error" then
              reply({ code = -32603, message = "definition failed" }, nil)
            else
              reply(nil, result)
            end
          end, delay)
        end
      else
        reply(nil, vim.NIL)
      end
      return true, id
    end,
    notify = function(method, params)
      if method == "$/cancelRequest" then
        table.insert(M.cancelled, params.id)
        pending[params.id] = nil
      elseif method == "exit" then
        closing = true
        dispatchers.on_exit(0, 15)
      end
      return true
    end,
    is_closing = function()
      return closing
    end,
    terminate = function()
      closing = true
    end,
  }
end

--- Start it for `bufnr` (a second client beside lsp-infer).
function M.start(bufnr, root_dir)
  return vim.lsp.start({ name = "definitions", cmd = M.cmd, root_dir = root_dir },
    { bufnr = bufnr })
end

return M
