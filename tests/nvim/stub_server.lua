-- An in-process stand-in for lsp-infer (a `cmd` function, see :help vim.lsp.rpc): it answers
-- textDocument/inlineCompletion after `delay_ms` with the items `answer(params, line)` returns
-- (and lspInfer/nextEdit with what `next_edit(params)` returns),
-- honours $/cancelRequest (RequestCancelled), and records what it was sent. For fast,
-- model-free checks of the plugin's client side.
local M = {
  delay_ms = 30,
  requests = {}, -- { method, params } in arrival order
  cancelled = {}, -- request ids the client cancelled
  notifications = {}, -- { method, params }
  honour_cancel = true, -- false: a cancelled request is still answered, late (as a busy server may)
}

--- The continuation of `full` after what was typed after "return " on the cursor's line.
function M.rest_of(full, line)
  local typed = line:match("return (.*)$") or ""
  if full:sub(1, #typed) == typed then
    return full:sub(#typed + 1)
  end
  return ""
end

--- An item as lsp-infer makes it: at the position, with its accept command carrying `id`.
function M.item(params, text, id)
  return {
    insertText = text,
    range = { start = params.position, ["end"] = params.position },
    command = { title = "Accept suggestion", command = "lspInfer.acceptSuggestion",
      arguments = { { id = id } } },
  }
end

--- Choices for an Invoked request (the user asked), one suggestion while typing. An id names
--- the choice and the place: the real server too gives an identical answer the same id.
M.choices = { "a + b", "b + a", "a" }

function M.answer(params, line)
  local invoked = params.context and params.context.triggerKind == 1
  local items = {}
  for i, full in ipairs(invoked and M.choices or { M.choices[1] }) do
    local rest = M.rest_of(full, line)
    if rest ~= "" then
      local at = params.position
      table.insert(items, M.item(params, rest, ("s%d:%d:%d"):format(i, at.line, at.character)))
    end
  end
  return items
end

--- The answer to lspInfer/nextEdit (after `next_edit_delay_ms`): none unless a test sets it.
M.next_edit_delay_ms = 30
function M.next_edit(params)
  return { edits = {}, id = vim.NIL, kind = vim.NIL, version = params.textDocument.version,
    label = vim.NIL }
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

--- The lifecycle notifications and accept commands, in order, as {event, id[, length]}.
function M.lifecycle()
  local out = {}
  for _, message in ipairs(M.events) do
    table.insert(out, message)
  end
  return out
end
M.events = {}

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
      if method == "workspace/executeCommand" and params.command == "lspInfer.acceptSuggestion" then
        table.insert(M.events, { "accept", params.arguments[1].id })
      end
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
          capabilities = {
            inlineCompletionProvider = vim.empty_dict(),
            textDocumentSync = 2,
            executeCommandProvider = { commands = { "lspInfer.acceptSuggestion",
              "lspInfer.refactorFile", "lspInfer.refactorFiles" } },
          },
          serverInfo = { name = "stub", version = "0" },
        })
      elseif method == "textDocument/inlineCompletion" then
        -- The line as the editor has it now (the stub shares the process with the editor).
        vim.defer_fn(function()
          local line = vim.api.nvim_get_current_line():sub(1, params.position.character)
          reply(nil, { items = M.answer(params, line) })
        end, M.delay_ms)
      elseif method == "lspInfer/nextEdit" then
        vim.defer_fn(function()
          reply(nil, M.next_edit(params))
        end, M.next_edit_delay_ms)
      elseif method == "workspace/executeCommand" and params.command == "lspInfer.acceptSuggestion" then
        reply(nil, vim.NIL)
      elseif method == "workspace/executeCommand" then
        local argument = params.arguments[1]
        local outcomes = {}
        for _, uri in ipairs(argument.uris or { argument.uri }) do
          table.insert(outcomes, { uri = uri, status = "unchanged", message = "stub" })
        end
        reply(nil, { outcomes = outcomes })
      elseif method == "lspInfer/stats" then
        reply(nil, M.stats or { requests = M.count("textDocument/inlineCompletion"), latencyMs = { p50 = 1 } })
      else
        reply(nil, vim.NIL)
      end
      return true, id
    end,
    notify = function(method, params)
      table.insert(M.notifications, { method, params })
      local event = method:match("^lspInfer/did(%a+)Suggestion$")
      if event then
        table.insert(M.events, { event, params.id, params.acceptedLength })
      end
      if method == "$/cancelRequest" then
        table.insert(M.cancelled, params.id)
        local reply = M.honour_cancel and pending[params.id]
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
