-- lsp-infer for Neovim: inline code completions (ghost text) from the lsp-infer language
-- server, and whole-file refactors on the team server.
--
--   require("lsp_infer").setup({ settings = { completion = { maxLines = 4 } } })
--
-- Neovim 0.12+ shows suggestions with the built-in vim.lsp.inline_completion; 0.10/0.11 (or
-- `fallback = true`) with this plugin's own extmarks (lua/lsp_infer/fallback.lua).
local config = require("lsp_infer.config")
local util = require("lsp_infer.util")

local M = {}

local api = vim.api

-- -- suggestions ---------------------------------------------------------------------------

--- The module that shows suggestions in the current buffer: native, fallback, or nil.
local function engine(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local fallback = require("lsp_infer.fallback")
  if fallback.states[bufnr] then
    return fallback
  end
  if config.path() == "native" then
    return require("lsp_infer.native")
  end
end

--- Whether a suggestion is on screen in the current buffer.
---@return boolean
function M.visible()
  local e = engine()
  return e ~= nil and e.visible()
end

--- Accept the suggestion. Returns false (and does nothing) when none is shown, so a mapping
--- can fall back to the key's usual meaning. Safe inside <expr> mappings.
---@return boolean
function M.accept()
  local e = engine()
  return e ~= nil and e.accept("all")
end

--- Accept the suggestion's first word.
---@return boolean
function M.accept_word()
  local e = engine()
  return e ~= nil and e.accept("word")
end

--- Accept the suggestion's first line.
---@return boolean
function M.accept_line()
  local e = engine()
  return e ~= nil and e.accept("line")
end

--- Hide the suggestion.
---@return boolean
function M.dismiss()
  local e = engine()
  return e ~= nil and e.dismiss()
end

--- Next choice. With one suggestion or none on screen, asks the server for its choices first
--- (an explicitly invoked request: up to completion.choices of them).
---@return boolean
function M.next()
  local e = engine()
  return e ~= nil and e.select(1)
end

--- Previous choice (asks the server first, as next() does).
---@return boolean
function M.prev()
  local e = engine()
  return e ~= nil and e.select(-1)
end

-- -- next-edit suggestions (next_edit.lua) ------------------------------------------------

--- Whether a next-edit suggestion is on screen in the current buffer.
---@return boolean
function M.next_edit_visible()
  return require("lsp_infer.next_edit").visible()
end

--- Go to the next-edit suggestion when the cursor is not on its first line, else apply it (all
--- its edits, one undo step, only if the buffer did not change since). Returns false (and does
--- nothing) when none is shown. Safe inside <expr> mappings.
---@return boolean
function M.next_edit_accept()
  return require("lsp_infer.next_edit").accept()
end

--- Take the next-edit suggestion away (the server counts it rejected).
---@return boolean dismissed whether one was shown
function M.next_edit_dismiss()
  return require("lsp_infer.next_edit").dismiss()
end

local ACTIONS = {
  accept = { M.accept, "Accept the lsp-infer suggestion" },
  accept_word = { M.accept_word, "Accept the first word of the lsp-infer suggestion" },
  accept_line = { M.accept_line, "Accept the first line of the lsp-infer suggestion" },
  dismiss = { M.dismiss, "Dismiss the lsp-infer suggestion" },
  next = { M.next, "Next lsp-infer suggestion (asks for the choices)" },
  prev = { M.prev, "Previous lsp-infer suggestion (asks for the choices)" },
}

--- Buffer-local insert-mode mappings. Each does its action when a suggestion is shown and
--- otherwise what the key did before (<Tab> still inserts a tab, or jumps in a snippet).
local function set_keymaps(bufnr)
  local keymaps = config.options.keymaps
  if not keymaps then
    return
  end
  for name, action in pairs(ACTIONS) do
    local lhs = keymaps[name]
    if type(lhs) == "string" and lhs ~= "" then
      local previous = util.buffer_mapping("i", lhs)
      vim.keymap.set("i", lhs, function()
        if action[1]() then
          return ""
        end
        return util.previous_action("i", lhs, previous)
      end, { buffer = bufnr, expr = true, replace_keycodes = true, silent = true, desc = action[2] })
    end
  end
end

-- -- attaching ----------------------------------------------------------------------------

--- LspAttach for a client named "lsp_infer": keymaps, native or fallback ghost text,
--- lspInfer/warm where the cursor rests (warm.lua) and next-edit suggestions (next_edit.lua).
---@param client vim.lsp.Client
---@param bufnr integer
function M.on_attach(client, bufnr)
  set_keymaps(bufnr)
  -- Whatever shows ghost text: next edits are drawn and applied by the plugin itself.
  require("lsp_infer.next_edit").attach(bufnr, client.id)
  local path = config.path()
  if path ~= "none" then
    require("lsp_infer.warm").attach(bufnr)
  end
  if path == "native" then
    require("lsp_infer.native").attach(bufnr)
  elseif path == "fallback" then
    if vim.lsp.inline_completion and vim.lsp.inline_completion.enable then
      -- Not both: keep the runtime's inline completion away from this client.
      pcall(vim.lsp.inline_completion.enable, false, { client_id = client.id })
    end
    require("lsp_infer.fallback").attach(bufnr, client.id)
  else
    util.notify_once(
      "no-inline",
      "lsp-infer: this Neovim has no vim.lsp.inline_completion (0.12+) and `fallback = false`: "
        .. "no ghost text. Set `fallback = \"auto\"`.",
      vim.log.levels.WARN
    )
  end
end

local augroup = api.nvim_create_augroup("lsp_infer", { clear = false })

--- The LspAttach/LspDetach autocommands (idempotent; plugin/lsp_infer.lua calls it too, so a
--- plain vim.lsp.enable("lsp_infer") gets ghost text and keymaps without setup()).
function M.install_autocmds()
  if M._autocmds then
    return
  end
  M._autocmds = true
  api.nvim_create_autocmd("LspAttach", {
    group = augroup,
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data and args.data.client_id or -1)
      if client and client.name == util.name then
        M.on_attach(client, args.buf)
      end
    end,
  })
  api.nvim_create_autocmd("LspDetach", {
    group = augroup,
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data and args.data.client_id or -1)
      if client and client.name == util.name then
        require("lsp_infer.fallback").detach(args.buf)
        require("lsp_infer.warm").detach(args.buf)
        require("lsp_infer.next_edit").detach(args.buf)
      end
    end,
  })
end

--- The executable of the configured command, or nil when `cmd` is a function.
---@return string?
function M.executable()
  local cmd = config.options.cmd
  if type(cmd) == "table" then
    return cmd[1]
  end
end

--- Whether the server executable can be started (true for a function `cmd`).
function M.server_found()
  local exe = M.executable()
  return exe == nil or vim.fn.executable(exe) == 1
end

local function missing_server_message()
  return ("lsp-infer: the server executable %q was not found, so there are no completions. "
    .. "Install it (`pip install 'lsp-infer[model]'`) or point `cmd` at it in "
    .. "require('lsp_infer').setup(); see :checkhealth lsp_infer."):format(M.executable() or "?")
end

--- Configure and enable the client.
---@param opts? lsp_infer.Options
function M.setup(opts)
  if vim.fn.has("nvim-0.10") ~= 1 then
    util.notify_once("version", "lsp-infer needs Neovim 0.10 or newer", vim.log.levels.ERROR)
    return
  end
  config.set(opts)
  M.install_autocmds()
  require("lsp_infer.commands").create()

  local filetypes = config.options.filetypes
  if not M.server_found() then
    -- One clear message, the first time a buffer it would attach to is opened; no client.
    api.nvim_create_autocmd("FileType", {
      group = api.nvim_create_augroup("lsp_infer.missing", { clear = true }),
      pattern = filetypes or "*",
      callback = function(args)
        if vim.bo[args.buf].buftype == "" then
          util.notify_once("missing", missing_server_message(), vim.log.levels.WARN)
          return true -- once
        end
      end,
    })
    return
  end
  pcall(api.nvim_del_augroup_by_name, "lsp_infer.missing")

  if vim.lsp.config and vim.lsp.enable then
    vim.lsp.config(util.name, config.lsp_config())
    vim.lsp.enable(util.name)
  else
    -- Neovim 0.10: start the client from a FileType autocommand.
    api.nvim_create_autocmd("FileType", {
      group = api.nvim_create_augroup("lsp_infer.start", { clear = true }),
      pattern = filetypes or "*",
      callback = function(args)
        M.start(args.buf)
      end,
    })
    for _, bufnr in ipairs(api.nvim_list_bufs()) do
      if api.nvim_buf_is_loaded(bufnr) and (not filetypes
          or vim.tbl_contains(filetypes, vim.bo[bufnr].filetype)) then
        M.start(bufnr)
      end
    end
  end
end

--- Start (or reuse) the client for a buffer with vim.lsp.start (what vim.lsp.enable does on
--- 0.11+).
---@param bufnr? integer
function M.start(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if vim.bo[bufnr].buftype ~= "" then
    return
  end
  local lsp_config = config.lsp_config()
  lsp_config.root_dir = config.root_dir(bufnr)
  lsp_config.filetypes = nil
  return vim.lsp.start(lsp_config, { bufnr = bufnr })
end

-- -- status, stats, settings ----------------------------------------------------------------

--- For statuslines: "" when no lsp-infer client runs, else "lsp-infer: loading", "…: ready",
--- "…: failed" or "…: off". `User LspInferStatus` fires when it changes.
---@param bufnr? integer
---@return string
function M.status(bufnr)
  return require("lsp_infer.status").text(bufnr)
end

--- The latest lspInfer/status notification ({state, message}) of the buffer's client, if any.
---@param bufnr? integer
function M.model_status(bufnr)
  return (require("lsp_infer.status").get(bufnr))
end

local function need_client(bufnr)
  local client = util.client(bufnr) or util.clients()[1]
  if client then
    return client
  end
  local why = M.server_found() and "no lsp-infer client is running for this buffer (filetype "
      .. vim.bo.filetype .. ")"
    or ("the server executable %q was not found"):format(M.executable() or "?")
  vim.notify("lsp-infer: " .. why, vim.log.levels.WARN, { title = "lsp-infer" })
end

--- Ask the server for lspInfer/stats; `callback(stats, err)`.
---@param callback fun(stats: table?, err: any?)
---@param bufnr? integer
function M.stats(callback, bufnr)
  local client = need_client(bufnr)
  if not client then
    return callback(nil, "no client")
  end
  util.request(client, "lspInfer/stats", vim.empty_dict(), function(err, result)
    callback(result, err)
  end, bufnr or api.nvim_get_current_buf())
end

--- The effective completion.enabled of a client (server default: true).
local function completion_enabled(client)
  local section = client.settings and client.settings.lspInfer
  local completion = type(section) == "table" and section.completion
  if type(completion) == "table" and completion.enabled ~= nil then
    return completion.enabled ~= false
  end
  return true
end

--- Turn completions on or off (completion.enabled, pushed with didChangeConfiguration) in every
--- lsp-infer client; nil flips the current buffer's state.
---@param enabled? boolean
---@return boolean? the new state
function M.toggle(enabled)
  local clients = util.clients()
  if enabled == nil then
    local client = util.client() or clients[1]
    local current
    if client then
      current = completion_enabled(client)
    else
      current = vim.tbl_get(config.options.settings or {}, "completion", "enabled") ~= false
    end
    enabled = not current
  end
  config.options.settings = config.options.settings or {}
  config.options.settings.completion = config.options.settings.completion or {}
  config.options.settings.completion.enabled = enabled
  for _, client in ipairs(clients) do
    local settings = client.settings or {}
    settings.lspInfer = util.objects(vim.tbl_deep_extend("force", settings.lspInfer or {},
      { completion = { enabled = enabled } }))
    client.settings = settings
    if client.config then
      client.config.settings = settings
    end
    util.notify(client, "workspace/didChangeConfiguration", { settings = settings })
    require("lsp_infer.status").disabled[client.id] = not enabled
  end
  if not enabled then
    M.dismiss()
  end
  vim.notify("lsp-infer: completions " .. (enabled and "on" or "off"), vim.log.levels.INFO,
    { title = "lsp-infer" })
  pcall(vim.cmd.redrawstatus)
  return enabled
end

-- -- refactors -------------------------------------------------------------------------------

local function report_outcomes(result, err)
  if err then
    vim.notify("lsp-infer: refactor failed: " .. (err.message or vim.inspect(err)),
      vim.log.levels.ERROR, { title = "lsp-infer" })
    return
  end
  M.last_refactor = result
  -- The server reports applied/failed files itself (window/showMessage); only say what it
  -- does not.
  for _, outcome in ipairs(type(result) == "table" and result.outcomes or {}) do
    if outcome.status == "cancelled" then
      vim.notify("lsp-infer: refactor cancelled: " .. (outcome.message or ""),
        vim.log.levels.INFO, { title = "lsp-infer" })
      return
    end
  end
end

local function file_buffer(bufnr)
  return api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].buftype == ""
    and api.nvim_buf_get_name(bufnr) ~= ""
end

--- Run `fn(instruction)` with the given instruction, or one asked for with vim.ui.input. An
--- empty answer lets the server offer its presets; cancelling the prompt does nothing.
local function with_instruction(instruction, fn)
  if instruction and instruction ~= "" then
    return fn(instruction)
  end
  vim.ui.input({ prompt = "Refactor instruction (empty: presets): " }, function(input)
    if input == nil then
      return
    end
    fn(input ~= "" and input or nil)
  end)
end

--- Refactor one file with the team model (lspInfer.refactorFile).
---@param opts? {bufnr?: integer, instruction?: string, on_done?: fun(result: table?, err: any)}
function M.refactor(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or api.nvim_get_current_buf()
  local client = util.client(bufnr)
  if not client then
    need_client(bufnr)
    return
  end
  with_instruction(opts.instruction, function(instruction)
    local argument = { uri = vim.uri_from_bufnr(bufnr), instruction = instruction }
    vim.notify(("lsp-infer: refactoring %s with the team model…"):format(
      vim.fn.fnamemodify(api.nvim_buf_get_name(bufnr), ":t")), vim.log.levels.INFO,
      { title = "lsp-infer" })
    util.request(client, "workspace/executeCommand", {
      command = "lspInfer.refactorFile",
      arguments = { argument },
    }, function(err, result)
      report_outcomes(result, err)
      if opts.on_done then
        opts.on_done(result, err)
      end
    end, bufnr)
  end)
end

--- Refactor every loaded file buffer attached to lsp-infer, one lspInfer.refactorFiles call per
--- client (one batch on the team server).
---@param opts? {instruction?: string, on_done?: fun(result: table?, err: any)}
function M.refactor_buffers(opts)
  opts = opts or {}
  local clients = util.clients()
  if #clients == 0 then
    need_client()
    return
  end
  with_instruction(opts.instruction, function(instruction)
    local calls = 0
    for _, client in ipairs(clients) do
      local uris = {}
      for _, bufnr in ipairs(vim.lsp.get_buffers_by_client_id(client.id)) do
        if file_buffer(bufnr) then
          table.insert(uris, vim.uri_from_bufnr(bufnr))
        end
      end
      if #uris > 0 then
        calls = calls + 1
        vim.notify(("lsp-infer: refactoring %d file(s) with the team model…"):format(#uris),
          vim.log.levels.INFO, { title = "lsp-infer" })
        util.request(client, "workspace/executeCommand", {
          command = "lspInfer.refactorFiles",
          arguments = { { uris = uris, instruction = instruction } },
        }, function(err, result)
          report_outcomes(result, err)
          if opts.on_done then
            opts.on_done(result, err)
          end
        end)
      end
    end
    if calls == 0 then
      vim.notify("lsp-infer: no file buffers are attached to lsp-infer", vim.log.levels.WARN,
        { title = "lsp-infer" })
    end
  end)
end

--- Cancel the refactors in progress (their cancellable $/progress).
---@return integer the number of cancelled progress tokens
function M.cancel()
  local count = 0
  local cancellable = require("lsp_infer.status").cancellable
  for client_id, tokens in pairs(cancellable) do
    local client = vim.lsp.get_client_by_id(client_id)
    for token in pairs(tokens) do
      if client then
        util.notify(client, "window/workDoneProgress/cancel", { token = token })
        count = count + 1
      end
      tokens[token] = nil
    end
  end
  vim.notify(count > 0 and ("lsp-infer: cancelling %d refactor(s)"):format(count)
    or "lsp-infer: nothing to cancel", vim.log.levels.INFO, { title = "lsp-infer" })
  return count
end

return M
