---@mod autodoc.picker.keys The picker's keymaps (`keys.*`, on the query field in insert and
--- normal mode) and the autocommands it listens to while open: typing, leaving, resizing, and
--- the sidecar's indexing progress and state changes.

local actions = require("autodoc.picker.actions")
local config = require("autodoc.config")
local layout = require("autodoc.picker.layout")
local render = require("autodoc.picker.render")
local search = require("autodoc.picker.search")
local sources = require("autodoc.sources")
local state = require("autodoc.picker.state")

local M = {}

--- Map the configured keys on the query field.
---@param S autodoc.PickerState
function M.map(S)
  local buf, keys = S.bufs.prompt, config.options.keys
  local function map(lhs, fn)
    vim.keymap.set({ "i", "n" }, lhs, fn, { buffer = buf, nowait = true })
  end
  for _, stage in ipairs(sources.toggles) do
    map(keys[stage], function()
      actions.toggle(stage)
    end)
  end
  map(keys.open, actions.open_selected)
  map(keys.quickfix, actions.to_quickfix)
  map(keys.close, actions.close)
  map(keys.next, function()
    actions.move(1)
  end)
  map(keys.prev, function()
    actions.move(-1)
  end)
  map("<Down>", function()
    actions.move(1)
  end)
  map("<Up>", function()
    actions.move(-1)
  end)
end

--- A served folder is indexing: learn the workspace from it, show how far it got, and search
--- again at most once a second so hits appear as the stored part grows.
---@param ev table
local function on_progress(ev)
  local S = state.current
  local p = ev.data and ev.data.result
  if not S or not p or ev.data.client_id ~= S.client.id then
    return
  end
  if vim.uv.fs_realpath(p.root) ~= S.root and p.root ~= S.root then
    return
  end
  if not S.workspace then
    S.workspace = p.workspace
    return search.now()
  end
  local due = (vim.uv.hrtime() - (S.searched_at or 0)) > 1e9
  if due and not S.query:match("^%s*$") and not S.cancel then
    return search.now()
  end
  render.stages(S)
  if #S.hits == 0 then
    render.list(S)
  end
end

--- The sidecar says a model, ranker or workspace changed: refresh the open query.
local function on_state_changed()
  local S = state.current
  if S and not S.workspace then
    search.in_workspace(S.client, S.root)
  else
    search.now()
  end
end

--- The editor was resized: place the windows anew and fit the list to its width.
local function on_resized()
  local S = state.current
  if not S then
    return
  end
  layout.place(S)
  render.list(S)
end

--- Listen while the picker is open (in `S.augroup`, deleted when it closes).
---@param S autodoc.PickerState
function M.listen(S)
  local group, buf = S.augroup, S.bufs.prompt
  vim.api.nvim_create_autocmd({ "TextChangedI", "TextChanged" }, {
    group = group,
    buffer = buf,
    callback = search.soon,
  })
  vim.api.nvim_create_autocmd("WinLeave", {
    group = group,
    buffer = buf,
    callback = function()
      vim.schedule(function()
        local cur = state.current
        if cur and vim.api.nvim_get_current_win() ~= cur.wins.prompt then
          actions.close()
        end
      end)
    end,
  })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "AutodocIndexProgress",
    callback = on_progress,
  })
  vim.api.nvim_create_autocmd("VimResized", { group = group, callback = on_resized })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = { "AutodocStateChanged", "AutodocIndexReady" },
    callback = on_state_changed,
  })
end

return M
