-- Options of require("lsp_infer").setup() and the client config built from them.
local util = require("lsp_infer.util")

local M = {}

---@class lsp_infer.Keymaps
---@field accept string|false       accept the whole suggestion
---@field accept_word string|false  accept its first word
---@field accept_line string|false  accept its first line
---@field dismiss string|false      hide it
---@field next string|false         next choice (asks the server for its choices first)
---@field prev string|false         previous choice

---@class lsp_infer.Options
---@field cmd string[]|fun(...): any  the server command
---@field filetypes string[]          buffers to attach to
---@field root_markers string[]       files that mark the workspace folder
---@field settings table              server settings (camelCase, nested), see docs/settings.md
---@field keymaps lsp_infer.Keymaps|false
---@field fallback "auto"|boolean     "auto": native inline completion on 0.12+, else the fallback
---@field debounce_ms integer         the fallback's delay after a keystroke
---@field notify_failed boolean       vim.notify when the model fails to load
---@field warm boolean                send lspInfer/warm where the cursor comes to rest
---@field warm_ms integer             how long the cursor must stay still before that
---@field definitions boolean         answer lspInfer/definitions from the buffer's other servers
---@field definitions_timeout_ms integer  the longest that answer takes (null for the rest)
---@field next_edit lsp_infer.NextEditOptions  next-edit suggestions (next_edit.lua)

---@class lsp_infer.NextEditKeymaps
---@field accept string|false   normal mode: go to the suggested edit, then apply it
---@field dismiss string|false  normal mode: take it off the screen

---@class lsp_infer.NextEditOptions
---@field enabled boolean        ask lspInfer/nextEdit after an edit and a pause
---@field debounce_ms integer    the pause after the last edit before asking
---@field references_timeout_ms integer  the longest lspInfer/references' answer takes (null after)
---@field keymaps lsp_infer.NextEditKeymaps|false

---@type lsp_infer.Options
M.defaults = {
  cmd = { "lsp-infer", "serve" },
  filetypes = {
    "python", "lua", "javascript", "javascriptreact", "typescript", "typescriptreact", "go",
    "rust", "c", "cpp", "objc", "cs", "java", "kotlin", "scala", "swift", "ruby", "php", "perl",
    "sh", "bash", "zsh", "fish", "r", "julia", "dart", "elixir", "erlang", "haskell", "ocaml",
    "zig", "vim", "sql", "html", "css", "scss", "vue", "svelte", "terraform", "dockerfile",
    "make", "cmake", "yaml", "toml", "json",
  },
  root_markers = { ".lspinferignore", ".git", "pyproject.toml", "setup.py", "package.json",
    "Cargo.toml", "go.mod", "Makefile" },
  settings = {},
  keymaps = {
    accept = "<Tab>",
    accept_word = "<M-Right>",
    accept_line = "<M-C-Right>",
    dismiss = "<C-]>",
    next = "<M-]>",
    prev = "<M-[>",
  },
  fallback = "auto",
  debounce_ms = 150,
  notify_failed = true,
  warm = true,
  warm_ms = 400,
  definitions = true,
  definitions_timeout_ms = 1000,
  next_edit = {
    enabled = true,
    debounce_ms = 300,
    references_timeout_ms = 3000,
    keymaps = { accept = "<Tab>", dismiss = "<Esc>" },
  },
}

---@type lsp_infer.Options
M.options = vim.deepcopy(M.defaults)
M.configured = false -- setup() was called

---@param opts? table
---@return lsp_infer.Options
function M.set(opts)
  opts = opts or {}
  local expected = {
    cmd = { "table", "function" },
    filetypes = { "table" },
    settings = { "table" },
    keymaps = { "table", "boolean" },
    debounce_ms = { "number" },
    root_markers = { "table" },
    notify_failed = { "boolean" },
    warm = { "boolean" },
    warm_ms = { "number" },
    definitions = { "boolean" },
    definitions_timeout_ms = { "number" },
    next_edit = { "table" },
  }
  for key, types in pairs(expected) do
    if opts[key] ~= nil and not vim.tbl_contains(types, type(opts[key])) then
      error(("lsp_infer: %s must be a %s, not %s"):format(key, table.concat(types, " or "),
        type(opts[key])))
    end
  end
  for _, key in ipairs({ "warm_ms", "definitions_timeout_ms" }) do
    if opts[key] ~= nil and opts[key] < 0 then
      error(("lsp_infer: %s must not be negative"):format(key))
    end
  end
  if opts.fallback ~= nil and opts.fallback ~= "auto" and type(opts.fallback) ~= "boolean" then
    error('lsp_infer: fallback must be "auto", true or false')
  end
  M.check_next_edit(opts.next_edit)
  local options = vim.deepcopy(M.defaults)
  for key, value in pairs(opts) do
    if key == "keymaps" then
      if value == false then
        options.keymaps = false
      elseif type(value) == "table" then
        options.keymaps = vim.tbl_extend("force", options.keymaps, value)
      end
    elseif key == "settings" then
      options.settings = vim.deepcopy(value)
    elseif key == "next_edit" then
      -- Merged one level down, like `keymaps`: { enabled = false } keeps the default keys.
      local next_edit = vim.tbl_extend("force", options.next_edit, value)
      if type(value.keymaps) == "table" then
        next_edit.keymaps = vim.tbl_extend("force", M.defaults.next_edit.keymaps, value.keymaps)
      end
      options.next_edit = next_edit
    else
      options[key] = value -- lists (cmd, filetypes) are replaced, not merged
    end
  end
  M.options = options
  M.configured = true
  return options
end

--- Check the `next_edit` option's fields (an error naming the wrong one).
---@param value table?
function M.check_next_edit(value)
  if value == nil then
    return
  end
  local expected = { enabled = "boolean", debounce_ms = "number",
    references_timeout_ms = "number" }
  for key, kind in pairs(expected) do
    if value[key] ~= nil and type(value[key]) ~= kind then
      error(("lsp_infer: next_edit.%s must be a %s, not %s"):format(key, kind, type(value[key])))
    end
  end
  for _, key in ipairs({ "debounce_ms", "references_timeout_ms" }) do
    if value[key] ~= nil and value[key] < 0 then
      error(("lsp_infer: next_edit.%s must not be negative"):format(key))
    end
  end
  local keymaps = value.keymaps
  if keymaps ~= nil and keymaps ~= false and type(keymaps) ~= "table" then
    error("lsp_infer: next_edit.keymaps must be a table or false")
  end
end

--- The server settings to send: the user's, and nextEdit.enabled = false when the plugin does
--- not ask for next edits (so the server does not keep edit histories for nothing), unless the
--- user set nextEdit.enabled themselves.
---@return table
function M.server_settings()
  local settings = vim.deepcopy(M.options.settings or {})
  if M.options.next_edit and M.options.next_edit.enabled == false then
    settings.nextEdit = type(settings.nextEdit) == "table" and settings.nextEdit or {}
    if settings.nextEdit.enabled == nil then
      settings.nextEdit.enabled = false
    end
  end
  return settings
end

--- "native" (vim.lsp.inline_completion, Neovim 0.12+), "fallback" (this plugin's extmarks),
--- or "none" (fallback = false on a Neovim without native inline completion).
---@return "native"|"fallback"|"none"
function M.path()
  local native = vim.lsp.inline_completion ~= nil
    and type(vim.lsp.inline_completion.enable) == "function"
    and type(vim.lsp.inline_completion.get) == "function"
  local fallback = M.options.fallback
  if fallback == true then
    return "fallback"
  elseif fallback == false then
    return native and "native" or "none"
  end
  return native and "native" or "fallback"
end

--- The workspace folder for a buffer: the nearest root marker, else the current directory when
--- the file is under it, else the file's own directory. (The team tier only sends files inside
--- the workspace folders, so there is always one.)
---@param bufnr integer
---@return string?
function M.root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = vim.fs.root(bufnr, M.options.root_markers)
  if root then
    return root
  end
  local cwd = vim.fn.getcwd()
  if name == "" then
    return cwd
  end
  local path = vim.fs.normalize(vim.fn.fnamemodify(name, ":p"))
  if path:sub(1, #cwd + 1) == cwd .. "/" then
    return cwd
  end
  return vim.fs.dirname(path)
end

--- The client capabilities to announce: our experimental features, each where the plugin
--- serves it (the server only uses what a client announces, docs/protocol.md):
--- - experimental.lspInfer.definitions with the `definitions` option (definitions.lua);
--- - experimental.lspInfer.references with next edits on (`next_edit.enabled` not false:
---   references.lua; the server offers the rest of a rename from its answer);
--- - experimental.lspInfer.suggestionReady where the plugin shows suggestions (ready.lua).
--- The runtime merges them into its defaults on 0.11+; 0.10 takes the given table whole, so it
--- gets the defaults here. Nil with neither.
---@return table?
function M.capabilities()
  local ours = {}
  if M.options.definitions ~= false then
    ours.definitions = true
  end
  if not (M.options.next_edit and M.options.next_edit.enabled == false) then
    ours.references = true
  end
  if M.path() ~= "none" then
    ours.suggestionReady = true
  end
  if next(ours) == nil then
    return nil
  end
  local capabilities = { experimental = { lspInfer = ours } }
  if vim.fn.has("nvim-0.11") ~= 1 then
    capabilities = vim.tbl_deep_extend("force", vim.lsp.protocol.make_client_capabilities(),
      capabilities)
  end
  return capabilities
end

--- The handlers of our custom notifications and of lspInfer/definitions and
--- lspInfer/references (and a wrapper of $/progress that remembers the cancellable refactor
--- progress, for :LspInferCancel).
function M.handlers()
  return {
    ["lspInfer/status"] = function(err, result, ctx)
      require("lsp_infer.status").on_status(err, result, ctx)
    end,
    ["window/showMessage"] = function(err, result, ctx, config)
      if require("lsp_infer.status").on_show_message(err, result, ctx) then
        return
      end
      local default = vim.lsp.handlers["window/showMessage"]
      if default then
        return default(err, result, ctx, config)
      end
    end,
    ["$/progress"] = function(err, result, ctx, config)
      require("lsp_infer.status").on_progress(err, result, ctx)
      local default = vim.lsp.handlers["$/progress"]
      if default then
        return default(err, result, ctx, config)
      end
    end,
    -- A request: what the handler returns is the answer (it yields until the other servers
    -- have answered, see definitions.lua).
    ["lspInfer/definitions"] = function(err, result, ctx)
      return require("lsp_infer.definitions").handler(err, result, ctx)
    end,
    -- Where the name at the cursor is used in the document, from the same servers (yields
    -- likewise, see references.lua).
    ["lspInfer/references"] = function(err, result, ctx)
      return require("lsp_infer.references").handler(err, result, ctx)
    end,
    -- After a cold start the server has a better suggestion where the cursor rests: ask again
    -- there if the user is still at it (ready.lua).
    ["lspInfer/suggestionReady"] = function(err, result, ctx)
      require("lsp_infer.ready").handler(err, result, ctx)
    end,
  }
end

--- The client config for vim.lsp.config (0.11+) or vim.lsp.start (0.10; root_dir resolved by
--- the caller).
---@return table
function M.lsp_config()
  local options = M.options
  local settings = util.objects(M.server_settings())
  local config = {
    name = util.name,
    cmd = options.cmd,
    filetypes = options.filetypes,
    root_dir = function(bufnr, on_dir)
      local root = M.root_dir(bufnr)
      if root then
        on_dir(root)
      end
    end,
    init_options = settings,
    settings = { lspInfer = settings },
    handlers = M.handlers(),
    -- experimental.lspInfer.definitions, .references and .suggestionReady (M.capabilities).
    capabilities = M.capabilities(),
    -- The accept command of an item: the runtime's get() runs it through the client after
    -- inserting the item; lifecycle.lua notes the acceptance and sends it to the server.
    commands = {
      [require("lsp_infer.lifecycle").ACCEPT] = function(command, ctx)
        require("lsp_infer.lifecycle").command(command, ctx)
      end,
    },
  }
  return config
end

return M
