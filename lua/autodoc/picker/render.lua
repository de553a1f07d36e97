---@mod autodoc.picker.render What the picker's windows show: the title, the hit list, the
--- stage checkboxes and status line, and the preview scrolled to the hit with its span marked
--- and the query's words highlighted.

local config = require("autodoc.config")
local layout = require("autodoc.picker.layout")
local row_fit = require("autodoc.rows")
local sources = require("autodoc.sources")
local state = require("autodoc.picker.state")

local M = {}

local ns = vim.api.nvim_create_namespace("autodoc_picker")

-- -- the title and the stage line -------------------------------------------------------------

--- The query field's title: the workspace, then the source's name, or the query's intent and
--- whether the answer was re-ranked.
---@param S autodoc.PickerState
---@param answer table?
---@return string
function M.title(S, answer)
  local parts = { " AutoDoc" }
  if S.workspace then
    table.insert(parts, ": " .. S.workspace)
  end
  if S.mode then
    table.insert(parts, " · " .. S.mode) -- find, related
    return table.concat(parts) .. " "
  end
  if answer and answer.fusion and answer.fusion.intent then
    table.insert(parts, " · " .. answer.fusion.intent) -- number, identifier, ... question
  end
  if answer and answer.rank then
    if answer.rank.state == "ready" then
      table.insert(parts, " · re-ranked by " .. answer.rank.model)
    else
      local why = answer.rank.error ~= "" and answer.rank.error or answer.rank.state
      table.insert(parts, " · not re-ranked: " .. why)
    end
  end
  return table.concat(parts) .. " "
end

--- `n` with thousands separated by commas: 5,252.
---@param n integer
---@return string
function M.thousands(n)
  local s = tostring(math.floor(n))
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

---@param p autodoc.IndexProgress
---@return string
local function progress_text(p)
  local pct = math.floor(100 * p.done / math.max(p.total, 1))
  if p.phase == "embedding" then
    return string.format(
      "embedding %d%% (%s/%s chunks)",
      pct,
      M.thousands(p.done),
      M.thousands(p.total)
    )
  end
  return string.format(
    "indexing %d%% (%s/%s files, %s chunks)",
    pct,
    M.thousands(p.done),
    M.thousands(p.total),
    M.thousands(p.chunks)
  )
end

--- What a stage's box says beside its key, where the name alone does not: nil hides the box.
---@type table<string, fun(key: string, a: autodoc.Answer?): string?>
local BOX_LABEL = {
  semantic = function(key, a)
    local label = "Semantic " .. key
    if a and a.semantic and a.semantic ~= "ready" then
      local cov = a.semantic_coverage
      local pct = cov and cov.total > 0 and math.floor(100 * cov.embedded / cov.total) or nil
      label = label .. " (" .. a.semantic .. (pct and (" " .. pct .. "%") or "") .. ")"
    end
    return label
  end,
  rerank = function(key, a) -- its label needs the model's name
    return a and ("Rerank (" .. a.rank.model .. ") " .. key) or nil
  end,
}

--- A line built from parts, some highlighted: { text, marks = { {from, to, group}, ... } }.
---@param line { text: string, marks: table[] }
---@param text string
---@param group? string
local function add(line, text, group)
  if group then
    table.insert(line.marks, { #line.text, #line.text + #text, group })
  end
  line.text = line.text .. text
end

--- A stage's box label with its key (`Lexical <M-l>`), or nil while the box is hidden: the
--- stage cannot run, or its label needs what no answer has said yet.
---@param S autodoc.PickerState
---@param stage string
---@return string?
local function box_label(S, stage)
  if not state.available(S, stage) then
    return nil
  end
  local key = config.options.keys[stage]
  if BOX_LABEL[stage] then
    return BOX_LABEL[stage](key, S.answer)
  end
  return stage:sub(1, 1):upper() .. stage:sub(2) .. " " .. key
end

--- A checkbox per toggle whose stage can run, each with its key: `[x] Lexical <M-l>   `.
---@param S autodoc.PickerState
---@param line { text: string, marks: table[] }
local function boxes(S, line)
  local req = state.requested(S)
  for _, stage in ipairs(sources.toggles) do
    local label = box_label(S, stage)
    if label then
      local on = vim.tbl_contains(req, stage)
      add(line, on and "[x]" or "[ ]", on and "AutodocCheckOn" or "AutodocCheckOff")
      add(line, " " .. label .. "   ")
    end
  end
end

--- The answer's summary: hits, mode, time, and what it says about itself from absolute
--- evidence, not from relevance (missing words, confidence).
---@param S autodoc.PickerState
---@param line { text: string, marks: table[] }
local function summary(S, line)
  local a = S.answer
  if not a then
    return
  end
  if a.mode_used == "facet" then -- filters only: the matching files, in path order
    local n, took = a.matched or 0, a.took_ms or 0
    add(line, string.format("%d of %d files · facet · %.0f ms", #S.hits, n, took))
    return
  end
  local filtered = a.filter and next(a.filter) and " · filtered" or ""
  add(
    line,
    string.format("%d hits · %s%s · %.0f ms", #S.hits, a.mode_used, filtered, a.took_ms or 0)
  )
  for _, part in ipairs(sources.doubts(a)) do
    add(line, part[1], part[2])
  end
end

--- The line under the windows: a source's status, or the stage boxes and the answer's summary;
--- then how far indexing got, while it runs.
---@param S autodoc.PickerState
function M.stages(S)
  if S.mode then
    vim.api.nvim_buf_set_lines(S.bufs.stages, 0, -1, false, { S.status or "" })
    return
  end
  local line = { text = "", marks = {} }
  boxes(S, line)
  summary(S, line)
  if S.notice then
    add(line, " · " .. S.notice, "AutodocNotice")
  end
  local busy = state.indexing(S)
  if busy then
    add(line, " · " .. progress_text(busy), "AutodocProgress")
  end
  local buf = S.bufs.stages
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { line.text })
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for _, m in ipairs(line.marks) do
    vim.api.nvim_buf_set_extmark(buf, ns, 0, m[1], { end_col = m[2], hl_group = m[3] })
  end
end

-- -- the hit list ------------------------------------------------------------------------------

--- The hits in list order: as ranked, or (group_by_file) by file in the order of each file's
--- best hit, a file's hits in rank order beneath its header line.
---@param hits table[]
---@return table[] hits, table[] rows
local function arrange(hits)
  if not config.options.picker.group_by_file then
    local rows = {}
    for i = 1, #hits do
      rows[i] = { hit = i }
    end
    return hits, rows
  end
  local order, by_path = {}, {}
  for _, hit in ipairs(hits) do
    if not by_path[hit.path] then
      by_path[hit.path] = {}
      table.insert(order, hit.path)
    end
    table.insert(by_path[hit.path], hit)
  end
  local arranged, rows = {}, {}
  for _, path in ipairs(order) do
    table.insert(rows, { header = path })
    for _, hit in ipairs(by_path[path]) do
      table.insert(arranged, hit)
      table.insert(rows, { hit = #arranged })
    end
  end
  return arranged, rows
end

--- The list's lines and marks ({ row, from, to, group }); arranges `S.hits` and fills
--- `S.rows` and `S.row_of` on the way.
---@param S autodoc.PickerState
---@param width integer
---@return string[] lines, table[] marks
local function list_lines(S, width)
  local lines, marks = {}, {}
  S.rows, S.row_of = {}, {}
  if S.error then
    return { "error: " .. S.error }, marks
  end
  if #S.hits == 0 then
    lines = { S.query:match("^%s*$") and "type to search" or "no hits" }
    local busy = state.indexing(S)
    if busy then
      table.insert(lines, progress_text(busy))
      table.insert(lines, "(lexical hits come from what is stored so far)")
      table.insert(marks, { 1, 0, #lines[2], "AutodocProgress" })
    end
    return lines, marks
  end
  S.hits, S.rows = arrange(S.hits)
  local grouped = config.options.picker.group_by_file
  for row, r in ipairs(S.rows) do
    if r.header then
      lines[row] = row_fit.cut(r.header, width, true)
      table.insert(marks, { row - 1, 0, #lines[row], "AutodocPath" })
    else
      local line, spans = row_fit.fit(S.hits[r.hit], width, grouped)
      lines[row] = line
      S.row_of[r.hit] = row
      for _, s in ipairs(spans) do
        table.insert(marks, { row - 1, s[1], s[2], s[3] })
      end
    end
  end
  return lines, marks
end

--- Show the hits (or why there are none), the cursor on the selected one, then the title,
--- the stage line and the preview to match.
---@param S autodoc.PickerState
function M.list(S)
  local buf = S.bufs.list
  local width = vim.api.nvim_win_is_valid(S.wins.list) and vim.api.nvim_win_get_width(S.wins.list)
    or 80
  local lines, marks = list_lines(S, width)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for _, m in ipairs(marks) do
    if m[3] > m[2] then
      vim.api.nvim_buf_set_extmark(buf, ns, m[1], m[2], { end_col = m[3], hl_group = m[4] })
    end
  end
  S.selected = math.max(1, math.min(S.selected, #S.hits))
  if #S.hits > 0 and vim.api.nvim_win_is_valid(S.wins.list) then
    vim.api.nvim_win_set_cursor(S.wins.list, { S.row_of[S.selected] or 1, 0 })
  end
  if vim.api.nvim_win_is_valid(S.wins.prompt) then
    vim.api.nvim_win_set_config(S.wins.prompt, { title = M.title(S, S.answer), title_pos = "left" })
  end
  M.stages(S)
  M.preview(S)
end

-- -- the preview -------------------------------------------------------------------------------

--- Highlight the query's words (case-insensitive, plain text) on the hit's lines.
---@param buf integer
---@param lines string[] the file's lines
---@param hit table
---@param query string
local function mark_words(buf, lines, hit, query)
  local words = {}
  for word in query:gmatch("[%w_%-%.:]+") do
    if #word > 1 then
      table.insert(words, (word:lower():gsub("%*$", "")))
    end
  end
  for lnum = hit.line_start, math.min(hit.line_end, #lines) do
    local lower = lines[lnum]:lower()
    for _, w in ipairs(words) do
      local from = 1
      while true do
        local s, e = lower:find(w, from, true)
        if not s then
          break
        end
        vim.api.nvim_buf_set_extmark(
          buf,
          ns,
          lnum - 1,
          s - 1,
          { end_col = e, hl_group = "AutodocMatch" }
        )
        from = e + 1
      end
    end
  end
end

--- The preview's title: the hit's `path:line`, cut from the left to fit (the file name and
--- line stay).
---@param hit autodoc.Item?
---@param win integer
---@return string
local function preview_title(hit, win)
  if not hit then
    return layout.NO_PREVIEW
  end
  local where = hit.path .. ":" .. (hit.line or hit.line_start)
  return " " .. row_fit.cut(where, vim.api.nvim_win_get_width(win) - 4, true) .. " "
end

--- The selected hit's file, scrolled to the hit, its span marked and the query's words lit.
---@param S autodoc.PickerState
function M.preview(S)
  if not S.wins.preview or not vim.api.nvim_win_is_valid(S.wins.preview) then
    return
  end
  local buf = S.bufs.preview
  local hit = S.hits[S.selected]
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local win = S.wins.preview
  vim.api.nvim_win_set_config(win, { title = preview_title(hit, win), title_pos = "center" })
  if not hit then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
    return
  end
  local fname = vim.fs.joinpath(state.files_root(S), hit.path)
  local ok, lines = pcall(vim.fn.readfile, fname)
  if not ok then
    lines = { "(cannot read " .. fname .. ")" }
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  for lnum = hit.line_start, math.min(hit.line_end, #lines) do
    vim.api.nvim_buf_set_extmark(buf, ns, lnum - 1, 0, { line_hl_group = "AutodocSpan" })
  end
  mark_words(buf, lines, hit, S.query)
  local row = hit.line or hit.line_start
  vim.api.nvim_win_set_cursor(win, { math.max(1, math.min(row, #lines)), 0 })
  vim.api.nvim_win_call(win, function()
    vim.fn.winrestview({ topline = math.max(1, math.min(hit.line_start, row) - 2) })
  end)
end

return M
