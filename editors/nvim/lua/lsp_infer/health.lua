-- :checkhealth lsp_infer
local M = {}

local health = vim.health

local function run(cmd, stdin)
  local ok, job = pcall(vim.system, cmd, { text = true, stdin = stdin })
  if not ok then
    return nil, tostring(job)
  end
  local result = job:wait(15000)
  return result
end

local function check_server(lsp_infer, config)
  health.start("lsp-infer: server")
  if not config.configured then
    health.info("require('lsp_infer').setup() was not called: the defaults apply")
  end
  local exe = lsp_infer.executable()
  if exe == nil then
    health.ok("cmd is a function: not checked here")
    return
  end
  if vim.fn.executable(exe) ~= 1 then
    health.error(("server executable %q not found (cmd = %s)"):format(exe,
      vim.inspect(config.options.cmd)), {
      "Install it: pip install 'lsp-infer[model]' (in a virtualenv: put its bin/ on PATH)",
      "Or point setup({ cmd = { '/path/to/lsp-infer', 'serve' } }) at it",
    })
    return
  end
  local path = vim.fn.exepath(exe)
  local result, err = run({ path, "--version" })
  if result and result.code == 0 then
    health.ok(("server executable: %s (%s)"):format(path, vim.trim(result.stdout or "")))
  else
    health.warn(("server executable %s found, but `--version` failed: %s"):format(path,
      result and vim.trim((result.stderr or "") .. (result.stdout or "")) or err))
  end
end

local function check_neovim(config)
  health.start("lsp-infer: Neovim")
  local version = tostring(vim.version())
  local path = config.path()
  if vim.fn.has("nvim-0.10") ~= 1 then
    health.error("Neovim " .. version .. " is too old: lsp-infer needs 0.10 or newer")
    return
  end
  if path == "native" then
    health.ok(("Neovim %s: native inline completion (vim.lsp.inline_completion)"):format(version))
  elseif path == "fallback" then
    local why = config.options.fallback == true and "fallback = true"
      or "no vim.lsp.inline_completion before Neovim 0.12"
    health.ok(("Neovim %s: the plugin's fallback ghost text (%s)"):format(version, why))
  else
    health.warn(("Neovim %s has no native inline completion and fallback = false: no ghost text")
      :format(version), { 'Set fallback = "auto"' })
  end
  local keymaps = config.options.keymaps
  if keymaps then
    local parts = {}
    for _, name in ipairs({ "accept", "accept_word", "accept_line", "dismiss", "next", "prev" }) do
      table.insert(parts, ("%s=%s"):format(name, keymaps[name] or "off"))
    end
    health.info("keymaps (insert mode): " .. table.concat(parts, ", "))
  else
    health.info("keymaps: off (map require('lsp_infer').accept() and friends yourself)")
  end
end

local function check_model(util)
  health.start("lsp-infer: model")
  local clients = util.clients()
  if #clients == 0 then
    health.info("no lsp-infer client is running (open a file of a configured filetype); "
      .. "to check the model, run `lsp-infer doctor` in a shell (it loads the model and runs "
      .. "one completion)")
    return
  end
  local statuses = require("lsp_infer.status")
  for _, client in ipairs(clients) do
    local status = statuses.by_client[client.id]
    local root = client.root_dir or (client.workspace_folders and client.workspace_folders[1]
      and vim.uri_to_fname(client.workspace_folders[1].uri)) or "?"
    local where = ("client %d (%s)"):format(client.id, root)
    if not status then
      health.warn(where .. ": no lspInfer/status received yet (the server is starting)")
    elseif status.state == "ready" then
      health.ok(("%s: model ready: %s"):format(where, status.message))
    elseif status.state == "loading" then
      health.info(("%s: model loading: %s"):format(where, status.message))
    else
      health.error(("%s: model %s: %s"):format(where, status.state, status.message), {
        "Run `lsp-infer doctor` in a shell",
        "Check model.path / LSP_INFER_MODEL, or reinstall the model: lsp-infer model fetch",
      })
    end
    if statuses.disabled[client.id] then
      health.info(where .. ": completions are off (:LspInferToggle)")
    end
  end
end

local function team_settings(util, config)
  local client = util.client() or util.clients()[1]
  local settings = client and client.settings and client.settings.lspInfer
    or config.options.settings or {}
  local team = type(settings.team) == "table" and settings.team or {}
  local url = team.url ~= vim.NIL and team.url or nil
  local key = team.apiKey ~= vim.NIL and team.apiKey or nil
  return url or vim.env.LSP_INFER_TEAM_URL, key or vim.env.LSP_INFER_TEAM_API_KEY
end

local function check_team(util, config)
  health.start("lsp-infer: team server (refactors)")
  local url, key = team_settings(util, config)
  if type(url) ~= "string" or url == "" then
    health.info("not configured (settings.team.url): :LspInferRefactor is off")
    return
  end
  url = url:gsub("/+$", "")
  health.info("team.url: " .. url .. (key and " (with an API key)" or " (no API key)"))
  if vim.fn.executable("curl") ~= 1 then
    health.info("curl is not installed: cannot check it from here; run `lsp-infer doctor`")
    return
  end
  -- The key goes to curl on stdin (-H @-), never on its command line.
  local result, err = run({
    "curl", "-sS", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}",
    "-H", "@-", url .. "/models",
  }, key and ("Authorization: Bearer " .. key .. "\n") or "")
  if not result then
    health.warn("could not run curl: " .. tostring(err))
    return
  end
  local code = tonumber(vim.trim(result.stdout or ""))
  if result.code ~= 0 or not code or code == 0 then
    health.error(("team server unreachable: %s"):format(vim.trim(result.stderr or "")),
      { "Check team.url and that the server is up (lsp-infer team-server)" })
  elseif code == 200 then
    health.ok(("team server reachable: GET %s/models → 200"):format(url))
  elseif code == 401 or code == 403 then
    health.error(("team server refused the API key: GET %s/models → %d"):format(url, code),
      { "Check team.apiKey (or LSP_INFER_TEAM_API_KEY)" })
  else
    health.warn(("team server answered GET %s/models with HTTP %d"):format(url, code))
  end
end

--- lspInfer/stats of a client, waited for (at most `ms`); nil and why when there is none.
local function stats_of(client, ms)
  local ok, response, err
  if vim.fn.has("nvim-0.11") == 1 then
    ok, response, err = pcall(client.request_sync, client, "lspInfer/stats", vim.empty_dict(), ms)
  else
    ok, response, err = pcall(client.request_sync, "lspInfer/stats", vim.empty_dict(), ms)
  end
  if not ok then
    return nil, tostring(response)
  end
  if not response then
    return nil, err or "no answer"
  end
  if response.err then
    return nil, response.err.message or vim.inspect(response.err)
  end
  return response.result
end

local function check_suggestions(util)
  health.start("lsp-infer: suggestions and latency (this session; kept on this machine)")
  local clients = util.clients()
  if #clients == 0 then
    health.info("no lsp-infer client is running")
    return
  end
  local figures = require("lsp_infer.figures")
  for _, client in ipairs(clients) do
    local stats, why = stats_of(client, 2000)
    if type(stats) ~= "table" then
      health.warn(("client %d: lspInfer/stats: %s"):format(client.id, why or "no answer"))
    else
      local parts = {}
      for _, pair in ipairs(figures.summary(stats)) do
        table.insert(parts, pair[1] .. ": " .. pair[2])
      end
      health.info(("client %d: %s"):format(client.id, table.concat(parts, "; ")))
      health.info("latency per minute:\n" .. table.concat(figures.latency(stats, 5), "\n"))
      health.info("acceptance rate (accepted of shown):\n"
        .. table.concat(figures.rates(stats), "\n"))
    end
  end
end

function M.check()
  local config = require("lsp_infer.config")
  local util = require("lsp_infer.util")
  local lsp_infer = require("lsp_infer")
  check_server(lsp_infer, config)
  check_neovim(config)
  check_model(util)
  check_suggestions(util)
  check_team(util, config)
end

return M
