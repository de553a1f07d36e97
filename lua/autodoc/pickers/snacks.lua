---@mod autodoc.pickers.snacks AutoDoc in folke/snacks.nvim's picker.
---
--- `require("autodoc.pickers.snacks").search()`: searched as you type (a live source), with
--- the stage toggles on the same keys as the built-in picker (shown as flags in the title);
--- `.related({ whole? })` and `.find()`. The items and requests are `autodoc.sources`'.

local config = require("autodoc.config")
local sources = require("autodoc.sources")

local M = {}

--- The picker's title after an answer: the source's summary (hits, missing words, confidence,
--- a spelling searched instead) and a notice; each stage's flag only where it can run.
---@param picker table snacks' picker
---@param source autodoc.Source
---@param result table? the answer
---@param items autodoc.Item[]
local function retitle(picker, source, result, items)
  local state = require("autodoc.picker.state")
  local status = result and source.describe(result, items) or "no answer"
  if picker.autodoc_notice then
    status = picker.autodoc_notice .. " · " .. status
  end
  picker.autodoc_answer, picker.autodoc_notice = result or picker.autodoc_answer, nil
  picker.title = picker.opts.title .. " · " .. status
  for stage, toggle in pairs(picker.opts.toggles) do
    if type(toggle) == "table" and vim.tbl_contains(sources.toggles, stage) then
      toggle.enabled = state.can_run(picker.autodoc_answer, stage)
    end
  end
  picker:update_titles()
end

--- One request in the finder's coroutine: asked on the main loop, waited for by suspending.
---@param ctx table snacks' finder context
---@return autodoc.Item[], table?
local function ask(ctx, client, source, workspace, query, extra)
  local async = ctx.async
  local result, done = nil, false
  vim.schedule(function()
    require("autodoc.client").request(
      client,
      source.method,
      source.params(workspace, query, extra),
      function(err, res)
        result, done = not err and res or nil, true
        async:resume()
      end
    )
  end)
  while not done do
    async:suspend()
  end
  local items = result and source.items(result, query) or {}
  vim.schedule(function()
    if not ctx.picker.closed then
      retitle(ctx.picker, source, result, items)
    end
  end)
  return items, result
end

--- The finder: the sidecar answers each search (with the stage toggles, which are options:
--- `o.lexical`, `o.semantic`, ...), in its own order.
---@param source autodoc.Source
---@param context table the source's request context
---@return fun(o: table, ctx: table): table|fun(cb: fun(item: table))
local function finder(client, root, workspace, source, context)
  return function(o, ctx)
    local query = ctx.filter.search
    if source.needs_query and query:match("^%s*$") then
      return {}
    end
    local extra = sources.request_context(context, sources.stages(o))
    return function(cb)
      local items = ask(ctx, client, source, workspace, query, extra)
      for i, it in ipairs(items) do
        cb({
          idx = i,
          score = #items - i + 1, -- the sidecar's order
          text = it.path .. " " .. it.breadcrumb,
          file = vim.fs.joinpath(root, it.path),
          pos = { it.line, 0 },
          preview_title = it.path .. ":" .. it.line, -- not the bare file name
          end_pos = { it.line_end, 0 },
          autodoc = it,
        })
      end
    end
  end
end

---@param item table
---@param picker table snacks' picker
---@return table[]
local function format(item, picker)
  -- fitted to the list's width as the built-in list (`autodoc.rows`: cut, the file name and
  -- line and the section stay)
  local win = picker and picker.list and picker.list.win and picker.list.win.win
  local width = win and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_width(win) or 80
  local line, spans = require("autodoc.rows").fit(item.autodoc, width - 2, false)
  local out, at = {}, 0 -- snacks' text chunks: the spans' groups, the gaps between them plain
  for _, span in ipairs(spans) do
    if span[1] > at then
      table.insert(out, { line:sub(at + 1, span[1]) })
    end
    table.insert(out, { line:sub(span[1] + 1, span[2]), span[3] })
    at = span[2]
  end
  if at < #line then
    table.insert(out, { line:sub(at + 1) })
  end
  return out
end

---@param kind "search"|"related"|"find"
---@param context table the source's request context
---@param opts table user options, merged over the picker's
local function pick(kind, client, root, workspace, context, opts)
  local source = sources[kind]
  local keys = config.options.keys
  local checked = require("autodoc.picker").load_stages()
  local spec = {
    source = "autodoc_" .. kind,
    title = "AutoDoc " .. kind,
    live = source.needs_query,
    supports_live = source.needs_query,
    search = opts.query,
    preview = "file",
    sort = { fields = { "score:desc", "idx" } },
    toggles = {}, -- each stage's flag in the title: its initial (L S R)
    finder = finder(client, root, workspace, source, context),
    format = format,
    confirm = function(picker, item, action) -- opened, then snacks' own jump
      sources.opened(client, workspace, source, item and item.autodoc)
      return require("snacks.picker.actions").jump(picker, item, action)
    end,
    actions = {},
    win = { input = { keys = {} } },
  }
  for _, stage in ipairs(sources.toggles) do
    spec.toggles[stage] = { icon = stage:sub(1, 1):upper() }
    spec[stage] = checked[stage]
    spec.actions["autodoc_" .. stage] = function(picker)
      local flags = {}
      for _, s in ipairs(sources.toggles) do
        flags[s] = picker.opts[s]
      end
      picker.autodoc_notice = sources.flip(flags, stage, function(s)
        return require("autodoc.picker.state").can_run(picker.autodoc_answer, s)
      end)
      if picker.autodoc_notice then
        return retitle(picker, source, picker.autodoc_answer, picker:items())
      end
      picker.opts[stage] = flags[stage]
      picker:find()
    end
    spec.win.input.keys[keys[stage]] = { "autodoc_" .. stage, mode = { "i", "n" } }
  end
  -- `require`, not the global `Snacks`: that is set only once snacks' own plugin/ file has run
  local picker =
    require("snacks").picker.pick(vim.tbl_deep_extend("force", spec, opts.snacks or {}))
  if picker then
    picker.autodoc_title = spec.title
  end
  return picker
end

local entries = sources.entries(pick)
M.search, M.related, M.find = entries.search, entries.related, entries.find

return M
