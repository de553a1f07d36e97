---@mod autodoc.config Options for AutoDoc; `setup()` merges into these validated defaults.

---@class autodoc.Keys
---@field lexical string toggle the lexical stage
---@field semantic string toggle the semantic stage
---@field rerank string toggle the rerank stage
---@field open string open the hit at its line span
---@field quickfix string send all hits to the quickfix list
---@field close string close the picker
---@field next string next hit
---@field prev string previous hit

---@class autodoc.PickerOptions
---@field width number fraction of the editor's columns
---@field height number fraction of the editor's lines
---@field list_width number fraction of the picker's width the hit list takes (the preview the rest)
---@field group_by_file boolean one header line per file, its hits beneath

---@class autodoc.Options
---@field cmd string[] how to start the sidecar
---@field root_markers string[] a folder holding one of these is a knowledge base (nearest wins)
---@field vcs_markers string[] tried only where no root marker is found upward (a repository)
---@field max_root_files integer ask before indexing a root with more Markdown files (0: never)
---@field large_root "ask"|"folder"|"index" over max_root_files: ask, the note's folder, or index
---@field server table initializationOptions for the sidecar (embedding, section_tokens, ...)
---@field debounce_ms integer wait after a keystroke before searching (>= 0; 0: every keystroke)
---@field limit integer hits per search (1..100)
---@field stages table<string, boolean> the stage toggles checked before any choice was saved
---@field picker autodoc.PickerOptions
---@field keys autodoc.Keys
---@field progress boolean say when indexing begins and ends (one line, never "Press ENTER")
---@field span_highlight_ms integer how long the jumped-to span stays highlighted (0: until moved)
---@field code_lens boolean show backlink counts over titles and linked headings (code lenses)

local sources = require("autodoc.sources")

local M = {}

--- Every stage a client may switch on and off, checked.
---@return table<string, boolean>
local function all_stages()
  local stages = {}
  for _, stage in ipairs(sources.toggles) do
    stages[stage] = true
  end
  return stages
end

---@type autodoc.Options
M.defaults = {
  cmd = { "autodoc", "serve" },
  root_markers = { ".autodoc", ".obsidian", "_schema", "dendron.yml", ".dendron.yml", ".zk" },
  vcs_markers = { ".git" },
  max_root_files = 5000,
  large_root = "ask",
  server = {},
  debounce_ms = 0, -- no fixed wait: each keystroke cancels the request in flight
  limit = 30,
  stages = all_stages(), -- lexical, semantic, rerank
  picker = { width = 0.9, height = 0.8, list_width = 0.55, group_by_file = false },
  keys = {
    lexical = "<M-l>",
    semantic = "<M-s>",
    rerank = "<M-r>",
    open = "<CR>",
    quickfix = "<C-q>",
    close = "<Esc>",
    next = "<C-n>",
    prev = "<C-p>",
  },
  progress = true,
  span_highlight_ms = 3000,
  code_lens = true,
}

---@type autodoc.Options
M.options = vim.deepcopy(M.defaults)

--- Keys given to `setup()` that AutoDoc does not know (reported by `:checkhealth autodoc`).
---@type string[]
M.unknown = {}

---@param prefix string
---@param given table
---@param known table
local function collect_unknown(prefix, given, known)
  for key, value in pairs(given) do
    if known[key] == nil then
      table.insert(M.unknown, prefix .. tostring(key))
    elseif
      type(value) == "table"
      and type(known[key]) == "table"
      and not vim.islist(known[key])
    then
      if key ~= "server" then
        collect_unknown(prefix .. key .. ".", value, known[key])
      end
    end
  end
end

--- Raise unless `value` is of type `validator` (a type name) or passes it (a function); the
--- error names the option, what it takes and what it got:
--- "autodoc: picker.width: expected a fraction > 0 and <= 1, got 2".
---@param name string
---@param value any
---@param validator string|fun(v: any): boolean
---@param expected? string what the option takes (default: the type name)
local function check(name, value, validator, expected)
  local ok
  if type(validator) == "string" then
    ok = type(value) == validator
  else
    ok = validator(value)
  end
  if not ok then
    local got = vim.inspect(value, { newline = " ", indent = "" })
    error(string.format("autodoc: %s: expected %s, got %s", name, expected or validator, got), 0)
  end
end

---@param v any
---@return boolean
local function strings(v)
  if type(v) ~= "table" or not vim.islist(v) then
    return false
  end
  for _, item in ipairs(v) do
    if type(item) ~= "string" then
      return false
    end
  end
  return true
end

---@param min number
---@return fun(v: any): boolean
local function at_least(min)
  return function(v)
    return type(v) == "number" and v >= min
  end
end

---@param v any
---@return boolean
local function fraction(v)
  return type(v) == "number" and v > 0 and v <= 1
end

---@param v any
---@return boolean
local function key(v)
  return type(v) == "string" and v ~= ""
end

--- The names under `keys`: every action's and every stage toggle's, sorted.
---@return string[]
local function key_names()
  local names = vim.tbl_keys(M.defaults.keys)
  for _, stage in ipairs(sources.toggles) do
    if not vim.tbl_contains(names, stage) then
      table.insert(names, stage)
    end
  end
  table.sort(names)
  return names
end

---@param o autodoc.Options
local function validate_picker(o)
  check("stages", o.stages, "table")
  for _, stage in ipairs(sources.toggles) do
    check("stages." .. stage, o.stages[stage], "boolean")
  end
  check("picker", o.picker, "table")
  check("picker.width", o.picker.width, fraction, "a fraction > 0 and <= 1")
  check("picker.height", o.picker.height, fraction, "a fraction > 0 and <= 1")
  check("picker.list_width", o.picker.list_width, function(v)
    return type(v) == "number" and v >= 0.2 and v <= 0.8
  end, "a fraction 0.2..0.8")
  check("picker.group_by_file", o.picker.group_by_file, "boolean")
  check("keys", o.keys, "table")
  for _, name in ipairs(key_names()) do
    check("keys." .. name, o.keys[name], key, "a key: a non-empty string such as <M-l>")
  end
end

--- Every option, in the order of `autodoc.Options`; the first wrong one raises.
---@param o autodoc.Options
local function validate(o)
  check("cmd", o.cmd, function(v)
    return strings(v) and #v > 0
  end, "the sidecar command: a non-empty list of strings")
  check("root_markers", o.root_markers, strings, "a list of strings")
  check("vcs_markers", o.vcs_markers, strings, "a list of strings")
  check("max_root_files", o.max_root_files, at_least(0), "a number >= 0")
  check("large_root", o.large_root, function(v)
    return v == "ask" or v == "folder" or v == "index"
  end, '"ask", "folder" or "index"')
  check("server", o.server, "table")
  check("debounce_ms", o.debounce_ms, at_least(0), "a number >= 0")
  check("limit", o.limit, function(v)
    return type(v) == "number" and v >= 1 and v <= 100
  end, "a number 1..100")
  validate_picker(o)
  check("progress", o.progress, "boolean")
  check("span_highlight_ms", o.span_highlight_ms, at_least(0), "a number >= 0")
  check("code_lens", o.code_lens, "boolean")
end

--- Merge `opts` into the defaults; raise on a wrong value, naming it; remember unknown keys.
---@param opts? autodoc.Options|table
---@return autodoc.Options
function M.setup(opts)
  opts = opts or {}
  M.unknown = {}
  collect_unknown("", opts, M.defaults)
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  -- Lists replace, not merge.
  merged.cmd = opts.cmd or merged.cmd
  merged.root_markers = opts.root_markers or merged.root_markers
  merged.vcs_markers = opts.vcs_markers or merged.vcs_markers
  validate(merged)
  M.options = merged
  return merged
end

return M
