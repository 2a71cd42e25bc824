-- An in-process stand-in for lsp-infer (a `cmd` function, see :help vim.lsp.rpc): it answers
-- textDocument/inlineCompletion after `delay_ms` with the items `answer(params, line)` returns,
-- honours $/cancelRequest (RequestCancelled), and records what it was sent. For fast,
-- model-free checks of the plugin's client side.
local M = {
  delay_ms = 30,
  requests = {}, -- { method, params } in arrival order
  cancelled = {}, -- request ids the client cancelled
  notifications = {}, -- { method, params }
}

--- The continuation of `full` after what was typed after "return " on the cursor's line.
function M.rest_of(full, line)
  local typed = line:match("return (.*)$") or ""
  if full:sub(1, #typed) == typed then
    return full:sub(#typed + 1)
  end
  return ""
end

function M.answer(params, line)
  local rest = M.rest_of("a + b", line)
  if rest == "" then
    return {}
  end
  return { { insertText = rest, range = { start = params.position, ["end"] = params.position } } }
end

function M.count(method)
  local n = 0
  for _, request in ipairs(M.requests) do
    if request[1] == method then
      n = n + 1
    end
  end
  return n
end

--- Requests (or notifications) of one method, in order: their params.
function M.sent(method)
  local out = {}
  for _, list in ipairs({ M.requests, M.notifications }) do
    for _, message in ipairs(list) do
      if message[1] == method then
        table.insert(out, message[2])
      end
    end
  end
  return out
end

--- Begin a cancellable work-done progress, as the server does for a refactor batch.
function M.progress(token)
  M.dispatchers.notification("$/progress", {
    token = token,
    value = { kind = "begin", title = "Team refactor", cancellable = true, percentage = 0 },
  })
end

--- Ask the editor for the lspInfer settings section (workspace/configuration), as the server
--- does after `initialized`.
function M.configuration()
  local result = M.dispatchers.server_request("workspace/configuration", {
    items = { { section = "lspInfer" } },
  })
  return result
end

--- Send lspInfer/status as the server would.
function M.status(state, message)
  M.dispatchers.notification("lspInfer/status", { state = state, message = message })
end

function M.cmd(dispatchers)
  M.dispatchers = dispatchers
  local closing, next_id = false, 0
  local pending = {} -- id -> reply function
  return {
    request = function(method, params, callback, notify_reply_callback)
      next_id = next_id + 1
      local id = next_id
      table.insert(M.requests, { method, params })
      local function reply(err, result)
        if pending[id] == nil then
          return
        end
        pending[id] = nil
        callback(err, result)
        if notify_reply_callback then
          notify_reply_callback(id)
        end
      end
      pending[id] = reply
      if method == "initialize" then
        reply(nil, {
          capabilities = { inlineCompletionProvider = vim.empty_dict(), textDocumentSync = 2 },
          serverInfo = { name = "stub", version = "0" },
        })
      elseif method == "textDocument/inlineCompletion" then
        -- The line as the editor has it now (the stub shares the process with the editor).
        vim.defer_fn(function()
          local line = vim.api.nvim_get_current_line():sub(1, params.position.character)
          reply(nil, { items = M.answer(params, line) })
        end, M.delay_ms)
      elseif method == "workspace/executeCommand" then
        local argument = params.arguments[1]
        local outcomes = {}
        for _, uri in ipairs(argument.uris or { argument.uri }) do
          table.insert(outcomes, { uri = uri, status = "unchanged", message = "stub" })
        end
        reply(nil, { outcomes = outcomes })
      elseif method == "lspInfer/stats" then
        reply(nil, { requests = M.count("textDocument/inlineCompletion"), latencyMs = { p50 = 1 } })
      else
        reply(nil, vim.NIL)
      end
      return true, id
    end,
    notify = function(method, params)
      table.insert(M.notifications, { method, params })
      if method == "$/cancelRequest" then
        table.insert(M.cancelled, params.id)
        local reply = pending[params.id]
        if reply then
          reply({ code = -32800, message = "cancelled" }, nil)
        end
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

return M
