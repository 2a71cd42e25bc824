-- User commands and the :LspInferStats window.
local M = {}

local api = vim.api

--- Flatten a stats object into aligned "key  value" lines (nested keys joined with dots).
---@param stats table
---@return string[]
function M.stats_lines(stats)
  local rows = {}
  local function walk(prefix, value)
    if type(value) == "table" and not vim.islist(value) then
      local keys = vim.tbl_keys(value)
      table.sort(keys, function(a, b)
        return tostring(a) < tostring(b)
      end)
      for _, key in ipairs(keys) do
        walk(prefix == "" and tostring(key) or (prefix .. "." .. tostring(key)), value[key])
      end
    else
      local text = value == vim.NIL and "null" or type(value) == "table"
          and vim.inspect(value, { newline = " ", indent = "" })
        or tostring(value)
      table.insert(rows, { prefix, text })
    end
  end
  walk("", stats)
  local width = 0
  for _, row in ipairs(rows) do
    width = math.max(width, #row[1])
  end
  local lines = {}
  for _, row in ipairs(rows) do
    table.insert(lines, row[1] .. string.rep(" ", width - #row[1] + 2) .. row[2])
  end
  return lines
end

--- Show lines in a floating window; q or <Esc> closes it.
---@param title string
---@param lines string[]
---@return integer win, integer buf
function M.float(title, lines)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "lsp_infer_stats"
  local width = #title + 4
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width + 2, math.max(vim.o.columns - 4, 20))
  local height = math.min(#lines, math.max(vim.o.lines - 6, 3))
  local win = api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.max(math.floor((vim.o.lines - height) / 2) - 1, 0),
    col = math.max(math.floor((vim.o.columns - width) / 2), 0),
    style = "minimal",
    border = "rounded",
    title = " " .. title .. " ",
    title_pos = "center",
  })
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, "<cmd>close<cr>", { buffer = buf, nowait = true, silent = true })
  end
  return win, buf
end

function M.show_stats()
  require("lsp_infer").stats(function(stats, err)
    if err or type(stats) ~= "table" then
      if err ~= "no client" then
        vim.notify("lsp-infer: lspInfer/stats failed: "
          .. (type(err) == "table" and err.message or tostring(err)), vim.log.levels.ERROR,
          { title = "lsp-infer" })
      end
      return
    end
    M.last_stats = stats
    local lines = require("lsp_infer.figures").lines(stats)
    vim.list_extend(lines,
      { "", "All counters (kept in the server's memory, never sent anywhere)" })
    for _, line in ipairs(M.stats_lines(stats)) do
      table.insert(lines, "  " .. line)
    end
    M.float("lsp-infer stats", lines)
  end)
end

local function instruction_of(args)
  local text = vim.trim(args.args or "")
  return text ~= "" and text or nil
end

function M.create()
  if M._created then
    return
  end
  M._created = true
  local function lsp_infer()
    return require("lsp_infer")
  end
  api.nvim_create_user_command("LspInferRefactor", function(args)
    lsp_infer().refactor({ instruction = instruction_of(args) })
  end, { nargs = "*", desc = "lsp-infer: refactor this file with the team model" })
  api.nvim_create_user_command("LspInferRefactorBuffers", function(args)
    lsp_infer().refactor_buffers({ instruction = instruction_of(args) })
  end, { nargs = "*", desc = "lsp-infer: refactor every loaded file buffer with the team model" })
  api.nvim_create_user_command("LspInferCancel", function()
    lsp_infer().cancel()
  end, { desc = "lsp-infer: cancel the refactors in progress" })
  api.nvim_create_user_command("LspInferStats", function()
    M.show_stats()
  end, { desc = "lsp-infer: latency, acceptance rates and every counter of the server" })
  api.nvim_create_user_command("LspInferToggle", function(args)
    local arg = vim.trim(args.args or "")
    local enabled = nil
    if arg == "on" then
      enabled = true
    elseif arg == "off" then
      enabled = false
    end
    lsp_infer().toggle(enabled)
  end, {
    nargs = "?",
    complete = function()
      return { "on", "off" }
    end,
    desc = "lsp-infer: turn completions on or off",
  })
  api.nvim_create_user_command("LspInferNextEdit", function(args)
    local arg = vim.trim(args.args or "")
    if arg == "dismiss" then
      lsp_infer().next_edit_dismiss()
    elseif arg == "" or arg == "accept" then
      if not lsp_infer().next_edit_accept() then
        vim.notify("lsp-infer: no next edit is shown", vim.log.levels.INFO, { title = "lsp-infer" })
      end
    else
      vim.notify("lsp-infer: :LspInferNextEdit [accept|dismiss]", vim.log.levels.WARN,
        { title = "lsp-infer" })
    end
  end, {
    nargs = "?",
    complete = function()
      return { "accept", "dismiss" }
    end,
    desc = "lsp-infer: go to the next edit, then apply it (accept), or dismiss it",
  })
  api.nvim_create_user_command("LspInferStatus", function()
    local status = lsp_infer().model_status()
    local text = lsp_infer().status()
    vim.notify(text == "" and "lsp-infer: not running for this buffer"
      or (text .. (status and status.message ~= "" and (" (" .. status.message .. ")") or "")),
      vim.log.levels.INFO, { title = "lsp-infer" })
  end, { desc = "lsp-infer: show the model's status" })
end

return M
