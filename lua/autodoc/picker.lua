---@mod autodoc.picker `:AutodocSearch`: search as you type, with live stage toggles.
---
--- Layout (spec §7): the query field over the hit list on the left, the file under the cursor
--- on the right, scrolled to the hit with its span marked and the words highlighted; a
--- checkbox per stage beneath. Every toggle searches again at once; one of Lexical and Semantic
--- always stays checked; the choice is kept under stdpath("data").

local client_mod = require("autodoc.client")
local config = require("autodoc.config")
local sources = require("autodoc.sources")

local M = {}

local ns = vim.api.nvim_create_namespace("autodoc_picker")
local jump_ns = vim.api.nvim_create_namespace("autodoc_jump")

---@class autodoc.PickerState
---@field client vim.lsp.Client
---@field root string
---@field workspace string?
---@field query string
---@field hits autodoc.Hit[]
---@field selected integer
---@field answer autodoc.Answer?
---@field error string?
---@field seq integer the latest search sent
---@field cancel fun()?
---@field timer uv.uv_timer_t?
---@field bufs table<string, integer>
---@field wins table<string, integer>
---@field typed integer? hrtime of the latest keystroke not yet searched for
---@field typed_at table<integer, integer> hrtime of the keystroke that led to search seq
---@field augroup integer
---@field rows table[] the list's lines: { hit = i } or { header = path }
---@field row_of table<integer, integer> hit index -> its line in the list
---@field searched_at integer hrtime of the latest search sent (progress re-searches wait 1 s)
---@field source autodoc.Source? what the picker lists instead of a search (find, related)
---@field source_answer table? the source's latest answer (an `autodoc.RelatedAnswer`, ...)
---@field context table the source's own request context (related: path, line)
---@field status string? the source's status line
---@field mode string? the source's name

---@type autodoc.PickerState?
local S = nil
local files_root

--- Keystroke-to-results latencies (ms), newest last; read by the benchmark and tests.
M.latencies = {}

-- -- the stage choice, kept across pickers and sessions ---------------------------------------

local function stages_file()
  return vim.fs.joinpath(vim.fn.stdpath("data"), "autodoc", "stages.json")
end

---@return table<string, boolean>
function M.load_stages()
  local stages = vim.deepcopy(config.options.stages)
  local fd = io.open(stages_file(), "r")
  if fd then
    local ok, saved = pcall(vim.json.decode, fd:read("*a"))
    fd:close()
    if ok and type(saved) == "table" then
      for _, s in ipairs(sources.toggles) do
        if type(saved[s]) == "boolean" then
          stages[s] = saved[s]
        end
      end
    end
  end
  return stages
end

---@param stages table<string, boolean>
local function save_stages(stages)
  local path = stages_file()
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local fd = io.open(path, "w")
  if fd then
    fd:write(vim.json.encode(stages))
    fd:close()
  end
end

local stages = nil ---@type table<string, boolean>?

--- Whether a stage can run now (from the latest answer; before one, assume it can).
---@param stage string
---@return boolean
local function available(stage)
  local a = S and S.answer
  if stage == "lexical" then
    return true
  elseif stage == "semantic" then
    return not a or (a.model ~= "" and a.semantic ~= "off")
  end
  return not a or (a.rank ~= nil and a.rank.state ~= "off")
end

--- The stages to request: the checked boxes among those shown, never no retriever (with
--- the semantic box hidden and Lexical unchecked, lexical answers).
---@return string[]
local function requested()
  local shown = {}
  for _, s in ipairs(sources.toggles) do
    shown[s] = stages[s] and available(s)
  end
  return sources.stages(shown)
end

-- -- rendering --------------------------------------------------------------------------------

---@param answer table?
---@return string
local function title(answer)
  local parts = { " AutoDoc" }
  if S and S.workspace then
    table.insert(parts, ": " .. S.workspace)
  end
  if S and S.mode then
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

---@param n integer
---@return string
local function thousands(n)
  local s = tostring(math.floor(n))
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

--- The indexing under way at the picker's root, if any: `autodoc/indexProgress` not complete.
---@return autodoc.IndexProgress?
local function indexing()
  if not S then
    return nil
  end
  local p = (client_mod.progress[S.client.id] or {})[S.root]
  if p and p.done < p.total then
    return p
  end
  return nil
end

---@param p autodoc.IndexProgress
---@return string
local function progress_text(p)
  local pct = math.floor(100 * p.done / math.max(p.total, 1))
  if p.phase == "embedding" then
    return string.format(
      "embedding %d%% (%s/%s chunks)",
      pct,
      thousands(p.done),
      thousands(p.total)
    )
  end
  return string.format(
    "indexing %d%% (%s/%s files, %s chunks)",
    pct,
    thousands(p.done),
    thousands(p.total),
    thousands(p.chunks)
  )
end

local function render_stages()
  if not S then
    return
  end
  if S.source then
    vim.api.nvim_buf_set_lines(S.bufs.stages, 0, -1, false, { S.status or "" })
    return
  end
  local a = S.answer
  local req = requested()
  local line, marks = "", {}
  local function box(label, on, hl_on)
    local start = #line
    line = line .. string.format("[%s] %s", on and "x" or " ", label) .. "   "
    table.insert(marks, { start, start + 3, on and hl_on or "AutodocCheckOff" })
  end
  box("Lexical " .. config.options.keys.lexical, vim.tbl_contains(req, "lexical"), "AutodocCheckOn")
  if available("semantic") then
    local label = "Semantic " .. config.options.keys.semantic
    if a and a.semantic and a.semantic ~= "ready" then
      local cov = a.semantic_coverage
      local pct = cov and cov.total > 0 and math.floor(100 * cov.embedded / cov.total) or nil
      label = label .. " (" .. a.semantic .. (pct and (" " .. pct .. "%") or "") .. ")"
    end
    box(label, stages.semantic, "AutodocCheckOn")
  end
  if a and available("rerank") then -- its label needs the model's name
    box(
      "Rerank (" .. a.rank.model .. ") " .. config.options.keys.rerank,
      stages.rerank,
      "AutodocCheckOn"
    )
  end
  if a and a.mode_used == "facet" then -- filters only: the matching files, in path order
    line = line
      .. string.format(
        "%d of %d files · facet · %.0f ms",
        #S.hits,
        a.matched or 0,
        a.took_ms or 0
      )
  elseif a then
    local filtered = a.filter and next(a.filter) and " · filtered" or ""
    line = line
      .. string.format("%d hits · %s%s · %.0f ms", #S.hits, a.mode_used, filtered, a.took_ms or 0)
    -- What the answer says about itself from absolute evidence, not from relevance.
    local doubt = ""
    if a.missing and #a.missing > 0 then
      doubt = " · missing: " .. table.concat(a.missing, ", ")
    end
    if a.confidence and a.confidence ~= "high" then
      doubt = doubt .. " · confidence " .. a.confidence
    end
    if doubt ~= "" then
      table.insert(marks, { #line, #line + #doubt, "AutodocLowConfidence" })
      line = line .. doubt
    end
  end
  local busy = indexing()
  if busy then
    local text = " · " .. progress_text(busy)
    table.insert(marks, { #line, #line + #text, "AutodocProgress" })
    line = line .. text
  end
  local buf = S.bufs.stages
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { line })
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for _, m in ipairs(marks) do
    vim.api.nvim_buf_set_extmark(buf, ns, 0, m[1], { end_col = m[2], hl_group = m[3] })
  end
end

--- `s` cut to `width` display cells: from the right (`…` at the end) or from the left.
---@param s string
---@param width integer
---@param from_left? boolean
---@return string
local function fit(s, width, from_left)
  if vim.fn.strdisplaywidth(s) <= width then
    return s
  end
  if width <= 1 then
    return width == 1 and "…" or ""
  end
  local chars = vim.fn.strchars(s)
  local lo, hi = 0, chars -- the most characters that fit beside the ellipsis
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    local part = from_left and vim.fn.strcharpart(s, chars - mid) or vim.fn.strcharpart(s, 0, mid)
    if vim.fn.strdisplaywidth(part) <= width - 1 then
      lo = mid
    else
      hi = mid - 1
    end
  end
  if from_left then
    return "…" .. vim.fn.strcharpart(s, chars - lo)
  end
  return vim.fn.strcharpart(s, 0, lo) .. "…"
end

--- The list's left column: a source item's label, else a facet dot or the relevance.
---@param hit table
---@return string
local function score_of(hit)
  if hit.label then -- a source's item: a match kind, a related score
    return hit.label
  end
  return hit.via and hit.via[1] == "facet" and "   ·" or string.format("%.2f", hit.relevance)
end

--- One hit as a list line that fits `width`: "0.93  path:line  breadcrumb". The path is cut
--- from the left (its file name and line stay), the breadcrumb from the right; the path keeps
--- at least 60% of what is left when both are long. Returns the line and the spans of
--- its parts: { {from, to, group}, ... } in bytes.
---@param hit table
---@param width integer
---@param grouped boolean the file is the header above: show only the line number
---@return string, table[]
local function hit_line(hit, width, grouped)
  local score = score_of(hit)
  local lead = grouped and ("  " .. score .. "  ") or (score .. "  ")
  local loc = grouped and ("L" .. hit.line_start) or (hit.path .. ":" .. hit.line_start)
  local crumb = hit.breadcrumb or ""
  local room = width - vim.fn.strdisplaywidth(lead) - 2
  local loc_w, crumb_w = vim.fn.strdisplaywidth(loc), vim.fn.strdisplaywidth(crumb)
  if loc_w + crumb_w > room then
    local crumb_room = math.max(math.min(crumb_w, math.floor(room * 0.4)), room - loc_w)
    loc = fit(loc, math.max(room - crumb_room, 8), true)
    crumb = fit(crumb, math.max(room - vim.fn.strdisplaywidth(loc), 0))
  end
  local line = lead .. loc .. "  " .. crumb
  local s_from = grouped and 2 or 0
  local loc_from = #lead
  return line,
    {
      { s_from, s_from + #score, "AutodocRelevance" },
      { loc_from, loc_from + #loc, "AutodocPath" },
      { loc_from + #loc + 2, #line, "AutodocBreadcrumb" },
    }
end

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

--- Where the hits' files are on this machine: the answer's root for a local sidecar, the
--- configured checkout for a team's server (its paths are the server's).
---@return string
files_root = function()
  if S.client.remote then
    return S.root
  end
  return (S.answer and S.answer.root) or S.root
end

local function render_preview()
  if not S or not S.wins.preview or not vim.api.nvim_win_is_valid(S.wins.preview) then
    return
  end
  local buf = S.bufs.preview
  local hit = S.hits[S.selected]
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  if not hit then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
    return
  end
  local fname = vim.fs.joinpath(files_root(), hit.path)
  local ok, lines = pcall(vim.fn.readfile, fname)
  if not ok then
    lines = { "(cannot read " .. fname .. ")" }
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  local last = math.min(hit.line_end, #lines)
  for lnum = hit.line_start, last do
    vim.api.nvim_buf_set_extmark(buf, ns, lnum - 1, 0, { line_hl_group = "AutodocSpan" })
  end
  -- The query words, inside the span (case-insensitive, plain text).
  local words = {}
  for word in S.query:gmatch("[%w_%-%.:]+") do
    if #word > 1 then
      table.insert(words, (word:lower():gsub("%*$", "")))
    end
  end
  for lnum = hit.line_start, last do
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
  local win = S.wins.preview
  vim.api.nvim_win_set_cursor(win, { math.max(1, math.min(hit.line_start, #lines)), 0 })
  vim.api.nvim_win_call(win, function()
    vim.fn.winrestview({ topline = math.max(1, hit.line_start - 2) })
  end)
end

local function render_list()
  if not S then
    return
  end
  local buf = S.bufs.list
  local width = vim.api.nvim_win_is_valid(S.wins.list) and vim.api.nvim_win_get_width(S.wins.list)
    or 80
  local lines, marks = {}, {}
  S.rows, S.row_of = {}, {}
  if S.error then
    lines = { "error: " .. S.error }
  elseif #S.hits == 0 then
    lines = { S.query:match("^%s*$") and "type to search" or "no hits" }
    local busy = indexing()
    if busy then
      table.insert(lines, progress_text(busy))
      table.insert(lines, "(lexical hits come from what is stored so far)")
      table.insert(marks, { 1, 0, #lines[2], "AutodocProgress" })
    end
  else
    S.hits, S.rows = arrange(S.hits)
    for row, r in ipairs(S.rows) do
      if r.header then
        lines[row] = fit(r.header, width, true)
        table.insert(marks, { row - 1, 0, #lines[row], "AutodocPath" })
      else
        local line, spans = hit_line(S.hits[r.hit], width, config.options.picker.group_by_file)
        lines[row] = line
        S.row_of[r.hit] = row
        for _, s in ipairs(spans) do
          table.insert(marks, { row - 1, s[1], s[2], s[3] })
        end
      end
    end
  end
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
    vim.api.nvim_win_set_config(S.wins.prompt, { title = title(S.answer), title_pos = "left" })
  end
  render_stages()
  render_preview()
end

-- -- searching --------------------------------------------------------------------------------

local ask_source

local function search_now()
  if not S then
    return
  end
  if S.timer then
    S.timer:stop()
  end
  if S.cancel then
    S.cancel() -- the latest query wins: drop the one in flight
    S.cancel = nil
  end
  S.seq = S.seq + 1
  local seq = S.seq
  if S.query:match("^%s*$") and (not S.source or S.source.needs_query) then
    S.hits, S.error = {}, nil
    render_list()
    return
  end
  if not S.workspace then
    return -- searched once the workspace is known
  end
  S.typed_at[seq], S.typed = S.typed, nil
  S.searched_at = vim.uv.hrtime()
  if S.source then
    return ask_source(seq)
  end
  local opts = { limit = config.options.limit, stages = requested() }
  S.cancel = client_mod.request(
    S.client,
    "autodoc/search.query",
    { S.workspace, S.query, opts },
    function(err, result)
      if not S or seq ~= S.seq then
        return -- a newer query was sent meanwhile
      end
      S.cancel = nil
      if err then
        if err.code == -32800 then
          return -- superseded
        end
        S.error = err.message
        S.hits = {}
      else
        S.error, S.answer, S.hits = nil, result, result.hits
      end
      render_list()
      local typed = S.typed_at[seq]
      if typed then
        table.insert(M.latencies, (vim.uv.hrtime() - typed) / 1e6)
        S.typed_at[seq] = nil
      end
      vim.api.nvim_exec_autocmds("User", { pattern = "AutodocResults", modeline = false })
    end
  )
end

--- Ask the picker's source (find, related) and list its items.
---@param seq integer
ask_source = function(seq)
  local source, query = S.source, S.query
  local ctx = vim.tbl_extend("force", S.context, { limit = config.options.limit })
  S.cancel = client_mod.request(
    S.client,
    source.method,
    source.params(S.workspace, query, ctx),
    function(err, result)
      if not S or seq ~= S.seq then
        return
      end
      S.cancel = nil
      if err then
        S.error, S.hits, S.status = err.message, {}, ""
      else
        S.error, S.source_answer = nil, result
        S.hits = source.items(result, query)
        S.status = source.describe(result, S.hits)
      end
      render_list()
      vim.api.nvim_exec_autocmds("User", { pattern = "AutodocResults", modeline = false })
    end
  )
end

local function search_soon()
  if not S then
    return
  end
  S.typed = vim.uv.hrtime()
  S.query = vim.api.nvim_buf_get_lines(S.bufs.prompt, 0, 1, false)[1] or ""
  S.timer = S.timer or vim.uv.new_timer()
  S.timer:stop()
  S.timer:start(
    config.options.debounce_ms,
    0,
    vim.schedule_wrap(function()
      if S then
        search_now()
      end
    end)
  )
end

--- "Lexical and Semantic": the retrievers as their boxes name them.
---@return string
local function retriever_names()
  local names = vim.tbl_map(function(s)
    return s:sub(1, 1):upper() .. s:sub(2)
  end, sources.retrievers)
  return table.concat(names, ", ", 1, #names - 1) .. " and " .. names[#names]
end

--- Flip a stage and search again at once.
---@param stage string
function M.toggle(stage)
  if not S or not vim.tbl_contains(sources.toggles, stage) then
    return
  end
  if not available(stage) then
    return -- a hidden box keeps its state
  end
  if stages[stage] and vim.tbl_contains(sources.retrievers, stage) then
    local others = vim.tbl_filter(function(s)
      return s ~= stage and stages[s] and available(s)
    end, sources.retrievers)
    if #others == 0 then
      vim.notify("autodoc: one of " .. retriever_names() .. " stays checked", vim.log.levels.INFO)
      return
    end
  end
  stages[stage] = not stages[stage]
  save_stages(stages)
  render_stages()
  search_now()
end

-- -- actions ----------------------------------------------------------------------------------

---@param delta integer
local function move(delta)
  if not S or #S.hits == 0 then
    return
  end
  S.selected = (S.selected - 1 + delta) % #S.hits + 1
  vim.api.nvim_win_set_cursor(S.wins.list, { S.row_of[S.selected] or S.selected, 0 })
  render_preview()
end

function M.close()
  if not S then
    return
  end
  local state = S
  S = nil
  if state.cancel then
    state.cancel()
  end
  if state.timer then
    state.timer:stop()
    state.timer:close()
  end
  pcall(vim.api.nvim_del_augroup_by_id, state.augroup)
  for _, win in pairs(state.wins) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
  vim.cmd.stopinsert()
end

--- Open a hit at its line span, the span highlighted for a moment.
---@param root string
---@param hit table
function M.jump(root, hit)
  vim.cmd.edit(vim.fn.fnameescape(vim.fs.joinpath(root, hit.path)))
  local buf = vim.api.nvim_get_current_buf()
  local count = vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_win_set_cursor(0, { math.min(hit.line_start, count), 0 })
  vim.cmd("normal! zv")
  vim.api.nvim_buf_clear_namespace(buf, jump_ns, 0, -1)
  for lnum = hit.line_start, math.min(hit.line_end, count) do
    vim.api.nvim_buf_set_extmark(buf, jump_ns, lnum - 1, 0, { line_hl_group = "AutodocSpan" })
  end
  local ms = config.options.span_highlight_ms
  if ms > 0 then
    vim.defer_fn(function()
      if vim.api.nvim_buf_is_valid(buf) then
        vim.api.nvim_buf_clear_namespace(buf, jump_ns, 0, -1)
      end
    end, ms)
  end
end

local function open_selected()
  if not S then
    return
  end
  local hit = S.hits[S.selected]
  local root = files_root()
  M.close()
  if hit then
    M.jump(root, hit)
  end
end

local function to_quickfix()
  if not S then
    return
  end
  local root = files_root()
  local items = {}
  for _, hit in ipairs(S.hits) do
    table.insert(items, {
      filename = vim.fs.joinpath(root, hit.path),
      lnum = hit.line_start,
      end_lnum = hit.line_end,
      col = 1,
      text = hit.breadcrumb .. " — " .. (hit.snippet or ""):gsub("\n", " "),
    })
  end
  local query = S.query
  M.close()
  vim.fn.setqflist({}, " ", { title = "AutoDoc: " .. query, items = items })
  vim.cmd.copen()
end

-- -- windows ----------------------------------------------------------------------------------

local function scratch()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  return buf
end

local function layout()
  local cols, lines = vim.o.columns, vim.o.lines
  local width = math.max(40, math.floor(cols * config.options.picker.width))
  local height = math.max(10, math.floor(lines * config.options.picker.height))
  local row = math.floor((lines - height) / 2)
  local col = math.floor((cols - width) / 2)
  local left = math.floor(width * config.options.picker.list_width)
  return {
    prompt = { row = row, col = col, width = left, height = 1 },
    list = { row = row + 3, col = col, width = left, height = height - 7 },
    preview = { row = row, col = col + left + 2, width = width - left - 2, height = height - 4 },
    stages = { row = row + height - 2, col = col, width = width, height = 1 },
  }
end

---@class autodoc.SearchOpts
---@field query? string start with this query
---@field root? string the knowledge base (default: around the current buffer)
---@field source? "find"|"related" list names, or a section's related ones, instead of hits
---@field context? table the source's request: related takes { path, line }

local open_at

--- Open the picker (at the root around the current buffer: asking first when it is large).
---@param opts? autodoc.SearchOpts
function M.open(opts)
  opts = opts or {}
  if S then
    M.close()
  end
  if opts.root then
    return open_at(opts.root, opts)
  end
  client_mod.choose_root(0, function(root)
    if root then
      open_at(root, opts)
    end
  end)
end

--- Place the windows where the editor's size puts them now.
local function relayout()
  if not S then
    return
  end
  local geo = layout()
  for name, win in pairs(S.wins) do
    local g = geo[name]
    if g and vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_set_config(win, {
        relative = "editor",
        row = g.row,
        col = g.col,
        width = g.width,
        height = g.height,
      })
    end
  end
  render_list()
end

--- A served folder is indexing: learn the workspace from it, show how far it got, and search
--- again at most once a second so hits appear as the stored part grows.
---@param ev table
local function on_progress(ev)
  local p = ev.data and ev.data.result
  if not S or not p or ev.data.client_id ~= S.client.id then
    return
  end
  if vim.uv.fs_realpath(p.root) ~= S.root and p.root ~= S.root then
    return
  end
  if not S.workspace then
    S.workspace = p.workspace
    return search_now()
  end
  local due = (vim.uv.hrtime() - (S.searched_at or 0)) > 1e9
  if due and not S.query:match("^%s*$") and not S.cancel then
    return search_now()
  end
  render_stages()
  if #S.hits == 0 then
    render_list()
  end
end

---@param root string
---@param opts autodoc.SearchOpts
function open_at(root, opts)
  local client = client_mod.start(root)
  if client and client.remote then
    root = client.root_dir -- the local checkout of the server's docs: previews, jumps
  end
  if not client then
    vim.notify(
      "autodoc: cannot start the sidecar (" .. table.concat(config.options.cmd, " ") .. ")",
      vim.log.levels.ERROR
    )
    return
  end
  stages = stages or M.load_stages()
  S = {
    client = client,
    root = root,
    query = opts.query or "",
    hits = {},
    selected = 1,
    seq = 0,
    bufs = { prompt = scratch(), list = scratch(), preview = scratch(), stages = scratch() },
    wins = {},
    typed_at = {},
    augroup = vim.api.nvim_create_augroup("autodoc_picker", { clear = true }),
    rows = {},
    row_of = {},
    searched_at = 0,
    source = opts.source and sources[opts.source] or nil,
    mode = opts.source,
    context = opts.context or {},
  }
  local geo = layout()
  local function float(name, enter, extra)
    local g = geo[name]
    local cfg = vim.tbl_extend("force", {
      relative = "editor",
      row = g.row,
      col = g.col,
      width = g.width,
      height = g.height,
      style = "minimal",
      border = "rounded",
      zindex = 60,
    }, extra or {})
    S.wins[name] = vim.api.nvim_open_win(S.bufs[name], enter, cfg)
  end
  float("list", false)
  float("preview", false, { title = " Preview ", title_pos = "center" })
  float("stages", false)
  float("prompt", true, { title = title(nil), title_pos = "left" })
  vim.wo[S.wins.list].cursorline = true
  vim.wo[S.wins.list].wrap = false
  vim.wo[S.wins.preview].wrap = false
  vim.wo[S.wins.preview].number = true
  vim.bo[S.bufs.preview].filetype = "markdown"
  vim.api.nvim_buf_set_lines(S.bufs.prompt, 0, -1, false, { S.query })
  vim.cmd.startinsert({ bang = true })

  local buf, keys = S.bufs.prompt, config.options.keys
  local function map(lhs, fn)
    vim.keymap.set({ "i", "n" }, lhs, fn, { buffer = buf, nowait = true })
  end
  map(keys.lexical, function()
    M.toggle("lexical")
  end)
  map(keys.semantic, function()
    M.toggle("semantic")
  end)
  map(keys.rerank, function()
    M.toggle("rerank")
  end)
  map(keys.open, open_selected)
  map(keys.quickfix, to_quickfix)
  map(keys.close, M.close)
  map(keys.next, function()
    move(1)
  end)
  map(keys.prev, function()
    move(-1)
  end)
  map("<Down>", function()
    move(1)
  end)
  map("<Up>", function()
    move(-1)
  end)

  vim.api.nvim_create_autocmd({ "TextChangedI", "TextChanged" }, {
    group = S.augroup,
    buffer = buf,
    callback = search_soon,
  })
  vim.api.nvim_create_autocmd("WinLeave", {
    group = S.augroup,
    buffer = buf,
    callback = function()
      vim.schedule(function()
        if S and vim.api.nvim_get_current_win() ~= S.wins.prompt then
          M.close()
        end
      end)
    end,
  })
  vim.api.nvim_create_autocmd("User", {
    group = S.augroup,
    pattern = "AutodocIndexProgress",
    callback = on_progress,
  })
  vim.api.nvim_create_autocmd("VimResized", { group = S.augroup, callback = relayout })
  -- The sidecar says a model, ranker or workspace changed: refresh the open query.
  vim.api.nvim_create_autocmd("User", {
    group = S.augroup,
    pattern = { "AutodocStateChanged", "AutodocIndexReady" },
    callback = function()
      if S and not S.workspace then
        client_mod.workspace(S.client, S.root, function(name)
          if S and name then
            S.workspace = name
            search_now()
          end
        end)
      else
        search_now()
      end
    end,
  })
  render_list()
  client_mod.workspace(client, root, function(name)
    if S and name then
      S.workspace = name
      search_now()
    end
  end)
end

--- For tests and the benchmark: the picker's state (nil when closed).
---@return table?
function M.state()
  if not S then
    return nil
  end
  return {
    query = S.query,
    workspace = S.workspace,
    hits = S.hits,
    selected = S.selected,
    answer = S.answer,
    error = S.error,
    stages = vim.deepcopy(stages),
    requested = requested(),
    bufs = S.bufs,
    wins = S.wins,
    root = S.root,
    rows = S.rows,
    progress = indexing(),
  }
end

return M
