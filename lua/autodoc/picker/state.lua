---@mod autodoc.picker.state The open picker's state, and the stage choice kept across pickers.
---
--- One picker is open at a time: `current`, nil when closed. What a search asks for follows
--- from it: the checked boxes among the stages the latest answer says can run.

local client_mod = require("autodoc.client")
local config = require("autodoc.config")
local sources = require("autodoc.sources")

local M = {}

---@class autodoc.PickerState
---@field client vim.lsp.Client
---@field root string
---@field workspace string?
---@field query string
---@field hits autodoc.Item[] the listed items (a search's: its hits, each with its label)
---@field selected integer
---@field answer autodoc.Answer? the latest search answer (a plain search: mode nil)
---@field source_answer table? the source's latest answer (an `autodoc.RelatedAnswer`, ...)
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
---@field source autodoc.Source what the picker asks: `sources.search`, find or related
---@field context table the source's own request context (related: path, line)
---@field status string? the source's status line
---@field notice string? why the last key did nothing, shown in the status line until the next
---@field mode string? the source's name, when it is not a plain search (find, related)

---@type autodoc.PickerState?
M.current = nil

--- The checked stage boxes, read once from the saved choice and kept across pickers.
---@type table<string, boolean>?
M.checked = nil

-- -- the stage choice, kept across pickers and sessions ---------------------------------------

local function stages_file()
  return vim.fs.joinpath(vim.fn.stdpath("data"), "autodoc", "stages.json")
end

--- The configured stages, overridden by the choice saved under stdpath("data").
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
function M.save_stages(stages)
  local path = stages_file()
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local fd = io.open(path, "w")
  if fd then
    fd:write(vim.json.encode(stages))
    fd:close()
  end
end

-- -- what can run, and what is asked for -------------------------------------------------------

--- What an answer says about whether a stage can run; a stage not named here always can.
---@type table<string, fun(a: autodoc.Answer): boolean>
local CAN_RUN = {
  semantic = function(a)
    return a.model ~= "" and a.semantic ~= "off"
  end,
  rerank = function(a)
    return a.rank ~= nil and a.rank.state ~= "off"
  end,
}

--- Whether a stage can run now (from the latest answer; before one, assume it can).
---@param S autodoc.PickerState
---@param stage string
---@return boolean
function M.available(S, stage)
  return M.can_run(S.answer, stage)
end

--- Whether an answer says a stage can run (no answer yet: assume it can); what every picker's
--- flags and boxes show.
---@param a autodoc.Answer?
---@param stage string
---@return boolean
function M.can_run(a, stage)
  local can_run = CAN_RUN[stage]
  return not a or not can_run or can_run(a)
end

--- The stages to request: the checked boxes among those shown, never no retriever (with
--- the semantic box hidden and Lexical unchecked, lexical answers).
---@param S autodoc.PickerState
---@return string[]
function M.requested(S)
  local shown = {}
  for _, s in ipairs(sources.toggles) do
    shown[s] = M.checked[s] and M.available(S, s)
  end
  return sources.stages(shown)
end

--- The indexing under way at the picker's root, if any: `autodoc/indexProgress` not complete.
---@param S autodoc.PickerState
---@return autodoc.IndexProgress?
function M.indexing(S)
  local p = (client_mod.progress[S.client.id] or {})[S.root]
  if p and p.done < p.total then
    return p
  end
  return nil
end

--- Where the hits' files are on this machine: the answer's root for a local sidecar, the
--- configured checkout for a team's server (its paths are the server's).
---@param S autodoc.PickerState
---@return string
function M.files_root(S)
  if S.client.remote then
    return S.root
  end
  return (S.answer and S.answer.root) or S.root
end

--- A new picker's state (not yet `current`).
---@param client vim.lsp.Client
---@param root string
---@param opts autodoc.SearchOpts
---@param bufs table<string, integer> its scratch buffers: prompt, list, preview, stages
---@return autodoc.PickerState
function M.new(client, root, opts, bufs)
  return {
    client = client,
    root = root,
    query = opts.query or "",
    hits = {},
    selected = 1,
    seq = 0,
    bufs = bufs,
    wins = {},
    typed_at = {},
    augroup = vim.api.nvim_create_augroup("autodoc_picker", { clear = true }),
    rows = {},
    row_of = {},
    searched_at = 0,
    source = sources[opts.source or "search"],
    mode = opts.source,
    context = opts.context or {},
  }
end

return M
