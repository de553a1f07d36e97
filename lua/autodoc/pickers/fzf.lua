---@mod autodoc.pickers.fzf AutoDoc in ibhagwan/fzf-lua.
---
--- `search()` asks the sidecar on every keystroke (fzf-lua's live mode: fzf only selects), with
--- the stage toggles on the same keys as the built-in picker (`<M-l>` becomes fzf's `alt-l`);
--- `related({ whole? })` and `find()` as the other adapters. The first line fzf reads is its
--- header (`--header-lines=1`): the stage flags and the answer's summary, fresh with each answer.
--- A row shows `label  path:line  breadcrumb` fitted as every picker fits it (`autodoc.rows`);
--- before it, hidden, `label path:line:1:` (the label before fzf-lua's entry separator), so its
--- file actions and previewer open the hit's line. Tested with the real fzf-lua and fzf.

local sources = require("autodoc.sources")

local M = {}

--- fzf's name for a Neovim key: `<M-l>` is `alt-l`, `<C-r>` is `ctrl-r`; nil for a key this
--- adapter does not bind in fzf (a named key, a shifted Alt).
---@param key string
---@return string?
function M.fzf_key(key)
  local mod, rest = key:match("^<([MmAaCc])%-(.+)>$")
  if not mod or #rest ~= 1 then
    return nil
  end
  if mod:lower() == "c" then
    return "ctrl-" .. rest:lower() -- Vim reads <C-R> as <C-r>
  end
  return rest:match("%l") and "alt-" .. rest or nil -- <M-S> is not <M-s>
end

--- The header: the flags of the stages the answer could run (an initial, upper case when
--- asked for, lower case when not) and the source's summary.
---@param kind string
---@param checked table<string, boolean>
---@param result table? the answer
---@param status string
---@return string
local function header(kind, checked, result, status)
  if kind ~= "search" then
    return status
  end
  local state = require("autodoc.picker.state")
  local asked = sources.stages(checked)
  local flags = {}
  for _, stage in ipairs(sources.toggles) do
    if state.can_run(result, stage) then
      local initial = stage:sub(1, 1)
      table.insert(flags, vim.tbl_contains(asked, stage) and initial:upper() or initial)
    end
  end
  return "[" .. table.concat(flags) .. "] " .. status
end

--- The cells fzf shows a row in: its window's width, less its pointer, marker and scroll bar.
---@return integer
local function row_width()
  local win = require("fzf-lua.utils").fzf_winobj()
  local id = win and win.fzf_winid
  local width = id and vim.api.nvim_win_is_valid(id) and vim.api.nvim_win_get_width(id)
    or math.floor(vim.o.columns * 0.8)
  return width - 3
end

-- The colours of a row's parts (`autodoc.rows`' spans).
local COLOUR = { AutodocRelevance = "yellow", AutodocPath = "magenta" }

--- One item as fzf's line: first, hidden (`--with-nth=2..`), the relevance and, after fzf-lua's
--- entry separator, `path:line:1:` for its file actions and previewer; then, after a tab, the
--- row fitted to `width` as every picker fits it (`autodoc.rows`).
---@param it autodoc.Item
---@param width integer
---@return string
local function row(it, width)
  local utils = require("fzf-lua.utils")
  local shown, spans = require("autodoc.rows").fit(it, width)
  local out, at = {}, 0
  for _, span in ipairs(spans) do
    local colour = COLOUR[span[3]]
    table.insert(out, shown:sub(at + 1, span[1]))
    local part = shown:sub(span[1] + 1, span[2])
    table.insert(out, colour and utils.ansi_codes[colour](part) or part)
    at = span[2]
  end
  table.insert(out, shown:sub(at + 1))
  return string.format(
    "%s%s%s:%d:1:\t%s",
    it.label,
    utils.nbsp,
    it.path,
    it.line,
    table.concat(out)
  )
end

--- The keys that flip a stage, as fzf-lua actions that search again (`reload`); one that
--- cannot act leaves `picked.notice` for the next header.
---@param picked table the picker's state: checked, last (answer), notice
---@return table<string, table>
local function toggle_actions(picked)
  local state = require("autodoc.picker.state")
  local actions = {}
  for _, stage in ipairs(sources.toggles) do
    local key = M.fzf_key(require("autodoc.config").options.keys[stage] or "")
    if key then
      actions[key] = {
        fn = function()
          picked.notice = sources.flip(picked.checked, stage, function(s)
            return state.can_run(picked.last, s)
          end)
          if not picked.notice then
            state.save_stages(picked.checked)
          end
        end,
        reload = true,
      }
    end
  end
  return actions
end

--- fzf-lua's options for a picker of `kind` at `root` (before the user's `opts.fzf`).
---@param kind string
---@param root string
---@param opts table
---@param actions table
---@return table
local function fzf_spec(kind, root, opts, actions)
  return {
    prompt = "AutoDoc " .. kind .. "> ",
    cwd = root,
    query = opts.query,
    previewer = "builtin",
    winopts = { preview = { layout = "vertical", vertical = "down:45%" } }, -- rows: full width
    exec_empty_query = false,
    fzf_opts = {
      ["--header-lines"] = 1,
      ["--ansi"] = true,
      ["--delimiter"] = "\t",
      ["--with-nth"] = "2..", -- the fitted row; the actions read the hidden `path:line:1:`
    },
    actions = actions,
  }
end

--- fzf-lua's open actions (`enter`, or `default` in older releases) wrapped so the sidecar
--- first hears which search hit was opened (`sources.opened`); the row's hidden
--- `path:line:1:` says which.
---@param actions table fzf-lua's actions, changed in place
---@param source autodoc.Source
local function noting_opened(actions, client, workspace, source)
  for _, key in ipairs({ "enter", "default" }) do -- opened, then fzf-lua's own file action
    local open = actions[key]
    local open_fn = type(open) == "table" and open.fn or open
    if type(open_fn) == "function" then
      local noted = function(selected, o)
        local nbsp = require("fzf-lua.utils").nbsp -- `row`'s separator before the path
        local path, line = (selected[1] or ""):match(nbsp .. "(.-):(%d+):1:\t")
        sources.opened(client, workspace, source, path and { path = path, line = tonumber(line) })
        return open_fn(selected, o)
      end
      actions[key] = type(open) == "table" and vim.tbl_extend("force", open, { fn = noted })
        or noted
    end
  end
end

---@param kind "search"|"related"|"find"
local function pick(kind, client, root, workspace, context, opts)
  local fzf = require("fzf-lua")
  local source = sources[kind]
  local picked = { checked = require("autodoc.picker").load_stages() } -- last, notice

  --- fzf-lua calls a live source with its arguments (the query in `args[1]`; older releases
  --- passed the query itself), and takes back a function that feeds fzf the lines.
  ---@param args string|string[]|nil
  local function contents(args)
    local query = (type(args) == "table" and args[1] or args) or ""
    return function(fzf_cb)
      coroutine.wrap(function()
        local co = coroutine.running()
        local extra = sources.request_context(context, sources.stages(picked.checked))
        vim.schedule(function()
          require("autodoc.client").request(
            client,
            source.method,
            source.params(workspace, query, extra),
            function(err, result)
              coroutine.resume(co, err, result)
            end
          )
        end)
        local err, result = coroutine.yield()
        local items = not err and result and source.items(result, query) or {}
        local status = err and ("autodoc: " .. (err.message or tostring(err)))
          or (result and source.describe(result, items) or "")
        picked.last = result or picked.last
        if picked.notice then -- first: the header is cut on the right
          status, picked.notice = picked.notice .. " · " .. status, nil
        end
        fzf_cb("\t" .. header(kind, picked.checked, result, status)) -- its shown field only
        local width = row_width()
        for _, it in ipairs(items) do
          fzf_cb(row(it, width))
        end
        fzf_cb()
      end)()
    end
  end

  local actions = vim.tbl_extend("force", {}, fzf.defaults.actions.files)
  noting_opened(actions, client, workspace, source)
  actions = kind == "search" and vim.tbl_extend("force", actions, toggle_actions(picked)) or actions
  local spec = vim.tbl_deep_extend("force", fzf_spec(kind, root, opts, actions), opts.fzf or {})
  if source.needs_query then
    fzf.fzf_live(contents, spec)
  else
    fzf.fzf_exec(contents(""), spec)
  end
end

local entries = sources.entries(pick)
M.search, M.related, M.find = entries.search, entries.related, entries.find

return M
