---@mod autodoc.pickers.telescope AutoDoc in nvim-telescope/telescope.nvim.
---
--- `require("autodoc.pickers.telescope").search()` (a dynamic finder: the sidecar answers each
--- prompt, in its own order; <M-l> <M-s> <M-r> toggle the stages and search again),
--- `.related({ whole? })` and `.find()`. Also `:Telescope autodoc search|related|find` once
--- `require("telescope").load_extension("autodoc")`.

local config = require("autodoc.config")
local sources = require("autodoc.sources")

local M = {}

--- An entry's line, fitted to the results window as the built-in picker fits its list
--- (`autodoc.rows`: cut, the file name and line and the section stay).
---@param entry table
---@return string, table[]
local function display(entry)
  local picker =
    require("telescope.actions.state").get_current_picker(vim.api.nvim_get_current_buf())
  local win = picker and picker.results_win
  local width = win and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_width(win) or 80
  local caret = picker and picker.selection_caret or "> "
  local line, spans =
    require("autodoc.rows").fit(entry.value, width - vim.fn.strdisplaywidth(caret) - 1, false)
  local highlights = {}
  for _, span in ipairs(spans) do
    table.insert(highlights, { { span[1], span[2] }, span[3] })
  end
  return line, highlights
end

--- Telescope's entry for an item: its file and line, for the previewer and the file actions.
---@param root string
---@return fun(it: autodoc.Item): table
local function entry_maker(root)
  return function(it)
    return {
      value = it,
      ordinal = it.path .. " " .. it.breadcrumb,
      display = display,
      filename = vim.fs.joinpath(root, it.path),
      lnum = it.line,
      col = 1,
    }
  end
end

--- A title on a telescope window's border (the picker's own method where it has one).
local function set_title(border, title)
  if border and border.change_title then
    border:change_title(title)
  end
end

--- A dynamic finder: the sidecar answers each prompt, with the stages checked now; each answer's
--- summary (hits, missing words, confidence, a spelling searched instead) titles the results.
---@param source autodoc.Source
---@param checked table<string, boolean>
---@param seen { answer: table?, picker: table? } the latest answer, and the picker once open
local function make_finder(client, root, workspace, source, context, checked, seen)
  local finders = require("telescope.finders")
  local channel = require("plenary.async.control").channel
  return finders.new_dynamic({
    entry_maker = entry_maker(root),
    fn = function(prompt) -- in telescope's coroutine: the reply is awaited, not polled
      prompt = prompt or ""
      if source.needs_query and prompt:match("^%s*$") then
        return {}
      end
      local extra = sources.request_context(context, sources.stages(checked))
      local tx, rx = channel.oneshot()
      require("autodoc.client").request(
        client,
        source.method,
        source.params(workspace, prompt, extra),
        tx
      )
      local err, result = rx()
      local items = not err and result and source.items(result, prompt) or {}
      seen.answer = result or seen.answer
      local status = err and ("autodoc: " .. (err.message or "error"))
        or (result and source.describe(result, items) or "")
      vim.schedule(function()
        set_title(seen.picker and seen.picker.results_border, status)
      end)
      return items
    end,
  })
end

--- Telescope's grep previewer, titled with the selected hit's `path:line` (whatever the global
--- `dynamic_preview_title`).
---@param opts table
---@return table
local function previewer(opts)
  local p = require("telescope.config").values.grep_previewer(opts)
  p.title = function(_, entry)
    return entry and (entry.value.path .. ":" .. entry.value.line) or "AutoDoc"
  end
  return p
end

---@param kind "search"|"related"|"find"
local function pick(kind, client, root, workspace, context, opts)
  local pickers = require("telescope.pickers")
  local sorters = require("telescope.sorters")
  local conf = require("telescope.config").values
  local action_state = require("telescope.actions.state")
  local source = sources[kind]
  local checked = require("autodoc.picker").load_stages()
  local seen = {}
  local title = "AutoDoc " .. kind
  local function finder()
    return make_finder(client, root, workspace, source, context, checked, seen)
  end

  pickers
    .new(opts.telescope or {}, {
      prompt_title = title,
      default_text = opts.query or opts.default_text,
      finder = finder(),
      -- the sidecar's order for a search; typing narrows related sections
      sorter = source.needs_query and sorters.highlighter_only(opts.telescope or {})
        or conf.generic_sorter(opts.telescope or {}),
      previewer = previewer(opts.telescope or {}),
      attach_mappings = function(bufnr, map)
        seen.picker = action_state.get_current_picker(bufnr)
        map({ "i", "n" }, "<CR>", function(prompt_bufnr) -- opened, then telescope's own
          local entry = action_state.get_selected_entry()
          sources.opened(client, workspace, source, entry and entry.value)
          require("telescope.actions").select_default(prompt_bufnr)
        end)
        for _, stage in ipairs(sources.toggles) do
          map({ "i", "n" }, config.options.keys[stage], function()
            local picker = action_state.get_current_picker(bufnr)
            local refused = sources.flip(checked, stage, function(s)
              return require("autodoc.picker.state").can_run(seen.answer, s)
            end)
            set_title(picker.prompt_border, refused and (title .. " · " .. refused) or title)
            if not refused then
              require("autodoc.picker.state").save_stages(checked)
              picker:refresh(finder(), { reset_prompt = false })
            end
          end)
        end
        return true
      end,
    })
    :find()
end

local entries = sources.entries(pick)
M.search, M.related, M.find = entries.search, entries.related, entries.find

return M
