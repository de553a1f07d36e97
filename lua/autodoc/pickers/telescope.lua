---@mod autodoc.pickers.telescope AutoDoc in nvim-telescope/telescope.nvim.
---
--- `require("autodoc.pickers.telescope").search()` (a dynamic finder: the sidecar answers each
--- prompt, in its own order; <M-l> <M-s> <M-r> toggle the stages and search again),
--- `.related({ whole? })` and `.find()`. Also `:Telescope autodoc search|related|find` once
--- `require("telescope").load_extension("autodoc")`.

local config = require("autodoc.config")
local sources = require("autodoc.sources")

local M = {}

--- Telescope's entry for an item: its file and line, for the previewer and the file actions.
---@param root string
---@return fun(it: autodoc.Item): table
local function entry_maker(root)
  return function(it)
    return {
      value = it,
      ordinal = it.path .. " " .. it.breadcrumb,
      display = it.label .. "  " .. it.path .. ":" .. it.line_start .. "  " .. it.breadcrumb,
      filename = vim.fs.joinpath(root, it.path),
      lnum = it.line_start,
      col = 1,
    }
  end
end

--- A dynamic finder: the sidecar answers each prompt, with the stages checked now.
---@param source autodoc.Source
---@param checked table<string, boolean>
local function make_finder(client, root, workspace, source, context, checked)
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
      return not err and result and source.items(result, prompt) or {}
    end,
  })
end

---@param kind "search"|"related"|"find"
local function pick(kind, client, root, workspace, context, opts)
  local pickers = require("telescope.pickers")
  local sorters = require("telescope.sorters")
  local conf = require("telescope.config").values
  local action_state = require("telescope.actions.state")
  local source = sources[kind]
  local checked = require("autodoc.picker").load_stages()
  local function finder()
    return make_finder(client, root, workspace, source, context, checked)
  end

  pickers
    .new(opts.telescope or {}, {
      prompt_title = "AutoDoc " .. kind,
      default_text = opts.query or opts.default_text,
      finder = finder(),
      -- the sidecar's order for a search; typing narrows related sections
      sorter = source.needs_query and sorters.highlighter_only(opts.telescope or {})
        or conf.generic_sorter(opts.telescope or {}),
      previewer = conf.grep_previewer(opts.telescope or {}),
      attach_mappings = function(bufnr, map)
        for _, stage in ipairs(sources.toggles) do
          map({ "i", "n" }, config.options.keys[stage], function()
            checked[stage] = not checked[stage]
            action_state.get_current_picker(bufnr):refresh(finder(), { reset_prompt = false })
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
