---@mod autodoc.picker `:AutodocSearch`: search as you type, with live stage toggles.
---
--- Layout (spec §7): the query field over the hit list on the left, the file under the cursor
--- on the right, scrolled to the hit with its span marked and the words highlighted; a
--- checkbox per stage beneath. Every toggle searches again at once; one of Lexical and Semantic
--- always stays checked; the choice is kept under stdpath("data").
---
--- By concern: `state` (the open picker, the stage choice), `layout` (windows), `render`
--- (title, list, stage line, preview), `search` (requests as you type), `actions` and `keys`
--- (keymaps, autocommands). This module is the public API.

local actions = require("autodoc.picker.actions")
local client_mod = require("autodoc.client")
local config = require("autodoc.config")
local keys = require("autodoc.picker.keys")
local layout = require("autodoc.picker.layout")
local render = require("autodoc.picker.render")
local search = require("autodoc.picker.search")
local sources = require("autodoc.sources")
local state = require("autodoc.picker.state")

local M = {}

--- Keystroke-to-results latencies (ms), newest last; read by the benchmark and tests.
M.latencies = search.latencies

--- The configured stages, overridden by the choice saved under stdpath("data").
M.load_stages = state.load_stages

--- Flip a stage and search again at once.
M.toggle = actions.toggle

M.close = actions.close

--- Open a hit at its line span, the span highlighted for a moment.
M.jump = actions.jump

---@class autodoc.SearchOpts
---@field query? string start with this query
---@field root? string the knowledge base (default: around the current buffer)
---@field source? "find"|"related" list names, or a section's related ones, instead of hits
---@field context? table the source's request: related takes { path, line }

---@param root string
---@param opts autodoc.SearchOpts
local function open_at(root, opts)
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
  state.checked = state.checked or state.load_stages()
  local S = state.new(client, root, opts, layout.buffers())
  state.current = S
  layout.open(S, render.title(S, nil))
  keys.map(S)
  keys.listen(S)
  render.list(S)
  search.in_workspace(client, root)
end

--- Open the picker (at the root around the current buffer: asking first when it is large).
---@param opts? autodoc.SearchOpts
function M.open(opts)
  opts = opts or {}
  local source = sources[opts.source or "search"]
  if type(source) ~= "table" or not source.method then
    vim.notify("autodoc: no picker source " .. tostring(opts.source), vim.log.levels.ERROR)
    return
  end
  if state.current then
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

--- For tests and the benchmark: the picker's state (nil when closed).
---@return table?
function M.state()
  local S = state.current
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
    stages = vim.deepcopy(state.checked),
    requested = state.requested(S),
    bufs = S.bufs,
    wins = S.wins,
    root = S.root,
    rows = S.rows,
    progress = state.indexing(S),
  }
end

return M
