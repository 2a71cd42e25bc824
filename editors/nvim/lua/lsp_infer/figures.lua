-- lspInfer/stats as text: the key figures, latency per minute and acceptance rates, for
-- :LspInferStats and :checkhealth lsp_infer (the figures VS Code's stats view draws).
local M = {}

local function number(value)
  return type(value) == "number" and value or nil
end

local function object(value)
  return type(value) == "table" and not vim.islist(value) and value or {}
end

--- Milliseconds for people: "180 ms", "1.2 s", "15 s", or "–".
function M.ms(value)
  value = number(value)
  if not value then
    return "–"
  end
  if value >= 1000 then
    return value >= 10000 and ("%.0f s"):format(value / 1000) or ("%.1f s"):format(value / 1000)
  end
  return ("%d ms"):format(math.floor(value + 0.5))
end

--- "40 % (4/10)", or "– (0/0)".
function M.rate(accepted, shown)
  accepted, shown = number(accepted) or 0, number(shown) or 0
  if shown == 0 then
    return ("– (%d/%d)"):format(accepted, shown)
  end
  return ("%d %% (%d/%d)"):format(math.floor(100 * accepted / shown + 0.5), accepted, shown)
end

--- A bar of `width` cells, `fraction` of it full.
function M.bar(fraction, width)
  local full = math.floor((fraction or 0) * width + 0.5)
  return string.rep("█", full) .. string.rep("░", width - full)
end

local SPARKS = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" }

--- One character per value, its height relative to the largest (a blank for none).
function M.sparkline(values)
  local top = 0
  for _, value in ipairs(values) do
    top = math.max(top, number(value) or 0)
  end
  local out = {}
  for _, value in ipairs(values) do
    value = number(value)
    if not value or top == 0 then
      table.insert(out, value and SPARKS[1] or " ")
    else
      table.insert(out, SPARKS[math.max(1, math.ceil(value / top * #SPARKS))])
    end
  end
  return table.concat(out)
end

--- The key figures: { label, value } pairs.
function M.summary(stats)
  stats = object(stats)
  local s = object(stats.suggestions)
  local latency, to_accept = object(stats.latencyMs), object(s.shownToAcceptedMs)
  local function count(value)
    return number(value) and tostring(value) or "–"
  end
  local rate = number(s.acceptanceRate)
  local out = {
    { "Requests", count(stats.requests) },
    { "Latency p50 / p95", M.ms(latency.p50) .. " / " .. M.ms(latency.p95) },
    { "Suggestions shown", count(s.shown) },
    { "Accepted", count(s.accepted) },
    { "Partly accepted", count(s.partlyAccepted) },
    { "Dismissed", count(s.dismissed) },
    -- Answered empty: the model was unsure of the first line (completion.minConfidence).
    { "Hidden (model unsure)", count(s.hidden) },
    { "Acceptance rate", rate and ("%d %%"):format(math.floor(rate * 100 + 0.5)) or "–" },
    { "Characters accepted", count(s.charactersAccepted) },
    { "Shown → accepted p50 / p95", M.ms(to_accept.p50) .. " / " .. M.ms(to_accept.p95) },
  }
  vim.list_extend(out, M.definitions(stats))
  vim.list_extend(out, M.next_edit(stats))
  return out
end

-- A next edit's counters, in the order things happen to one.
local NEXT_EDIT_COUNTS = { "predicted", "shown", "accepted", "rejected" }

--- Next-edit suggestions (lspInfer/nextEdit): { label, value } pairs, none from a server
--- without `nextEdit` in its stats. A counter the server does not report reads "–".
function M.next_edit(stats)
  local n = object(object(stats).nextEdit)
  if next(n) == nil then
    return {}
  end
  local function counts(group, first)
    local parts = first and { first } or {}
    for _, key in ipairs(NEXT_EDIT_COUNTS) do
      local value = number(group[key])
      table.insert(parts, ("%s %s"):format(value and tostring(value) or "–", key))
    end
    return table.concat(parts, ", ")
  end
  local asked = number(n.requests)
  local out = {
    { "Next edits", counts(n, ("%s asked"):format(asked and tostring(asked) or "–")) },
    { "Next-edit acceptance", M.rate(n.accepted, n.shown) },
  }
  if number(n.p50Ms) or number(n.p95Ms) then
    table.insert(out, { "Next edits p50 / p95", M.ms(n.p50Ms) .. " / " .. M.ms(n.p95Ms) })
  end
  local by_kind = object(n.byKind)
  local kinds = vim.tbl_keys(by_kind)
  table.sort(kinds, function(a, b)
    return tostring(a) < tostring(b)
  end)
  for _, kind in ipairs(kinds) do
    table.insert(out, { "  " .. tostring(kind), counts(object(by_kind[kind])) })
  end
  return out
end

--- Where names are defined, asked of the editor (lspInfer/definitions): { label, value }
--- pairs, none from a server without `definitions` in its stats.
function M.definitions(stats)
  local d = object(object(stats).definitions)
  if next(d) == nil then
    return {}
  end
  if d.supported ~= true then
    return { { "Definitions", "not asked (the editor does not offer them)" } }
  end
  local function count(value)
    return number(value) or 0
  end
  return {
    { "Definitions answered", ("%d of %d asked (%d requests), %d used"):format(
      count(d.answered), count(d.asked), count(d.requests), count(d.used)) },
    { "Definitions p50 / p95", ("%s / %s, %d timed out, %d failed"):format(M.ms(d.p50Ms),
      M.ms(d.p95Ms), count(d.timedOut), count(d.failed)) },
  }
end

local function clock(t)
  return os.date("%H:%M", t)
end

--- Latency per minute: a sparkline of p95 over the minutes with answers, then the last
--- `max_rows` minutes, newest last.
---@param time_label? fun(t: integer): string
function M.latency(stats, max_rows, time_label)
  time_label = time_label or clock
  local points = {}
  for _, point in ipairs(object(object(stats).latencyByMinute).points or {}) do
    if type(point) == "table" and number(point.t) then
      table.insert(points, point)
    end
  end
  table.sort(points, function(a, b)
    return a.t < b.t
  end)
  if #points == 0 then
    return { "no suggestions answered yet" }
  end
  local p95 = {}
  for _, point in ipairs(points) do
    table.insert(p95, point.p95)
  end
  local lines = { ("p95 %s  %s–%s"):format(M.sparkline(p95), time_label(points[1].t),
    time_label(points[#points].t + 60)) }
  for i = math.max(1, #points - (max_rows or 10) + 1), #points do
    local point = points[i]
    table.insert(lines, ("%s  p50 %7s  p95 %7s  %d answered"):format(time_label(point.t),
      M.ms(point.p50), M.ms(point.p95), number(point.count) or 0))
  end
  return lines
end

-- The server's confidence bands (lsp_infer/feedback.py), in its order: "unknown" is where no
-- confidence was reported (the team model, cached answers).
local CONFIDENCE_BANDS = { "0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1", "unknown" }

local SECTIONS = {
  { "byLength", "by length (characters)", function(label) return label end },
  { "byLines", "by lines", function(label)
    return label .. (label == "1" and " line" or " lines")
  end },
  { "byExtraContext", "by extra context", function(label) return label .. " extra context" end },
  -- With how many of each band were hidden (completion.minConfidence), not only shown.
  { "byConfidence", "by confidence (first line)", function(label)
    return "confidence " .. label
  end, order = CONFIDENCE_BANDS, hidden = true },
}

--- The labels of a breakdown in `order` (others after them), else small buckets first: the
--- server's order is lost in a Lua table.
local function sorted_labels(groups, order)
  local rank = {}
  for i, label in ipairs(order or {}) do
    rank[label] = i
  end
  local labels = vim.tbl_keys(groups)
  table.sort(labels, function(a, b)
    local ra, rb = rank[a] or math.huge, rank[b] or math.huge
    if ra ~= rb then
      return ra < rb
    end
    local na, nb = tonumber(a:match("^%d+")), tonumber(b:match("^%d+"))
    if na and nb and na ~= nb then
      return na < nb
    end
    return a < b -- "with" before "without"
  end)
  return labels
end

--- `text` padded with spaces to `width` display cells ("–" is one cell, three bytes).
local function pad(text, width)
  return text .. string.rep(" ", width - vim.fn.strdisplaywidth(text))
end

--- Acceptance rates: all suggestions, then by length, lines, extra context and confidence
--- (with the hidden count), as bars.
function M.rates(stats)
  local s = object(object(stats).suggestions)
  local lines = {}
  local function row(label, group, hidden)
    local shown, accepted = number(group.shown) or 0, number(group.accepted) or 0
    local fraction = shown > 0 and accepted / shown or 0
    local rate = M.rate(accepted, shown)
    if hidden then
      -- A column of its own, so the rate before it (of varying width) is padded.
      rate = ("%s  %d hidden"):format(pad(rate, 16), number(group.hidden) or 0)
    end
    table.insert(lines, ("  %-22s %s  %s"):format(label, M.bar(fraction, 20), rate))
  end
  row("all", s)
  for _, section in ipairs(SECTIONS) do
    local groups = object(s[section[1]])
    local labels = sorted_labels(groups, section.order)
    if #labels > 0 then
      table.insert(lines, section[2])
      for _, label in ipairs(labels) do
        row(section[3](label), object(groups[label]), section.hidden)
      end
    end
  end
  return lines
end

--- Everything, as the lines of :LspInferStats (before the flat list of every counter).
function M.lines(stats, time_label)
  local lines = {}
  local width = 0
  local summary = M.summary(stats)
  for _, pair in ipairs(summary) do
    width = math.max(width, vim.fn.strdisplaywidth(pair[1]))
  end
  for _, pair in ipairs(summary) do
    table.insert(lines, pair[1] .. string.rep(" ", width - vim.fn.strdisplaywidth(pair[1]) + 2)
      .. pair[2])
  end
  table.insert(lines, "")
  table.insert(lines, "Latency per minute (last hour)")
  for _, line in ipairs(M.latency(stats, 10, time_label)) do
    table.insert(lines, "  " .. line)
  end
  table.insert(lines, "")
  table.insert(lines, "Acceptance rate (accepted of shown)")
  vim.list_extend(lines, M.rates(stats))
  return lines
end

return M
