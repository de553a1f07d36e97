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
---@field debounce_ms integer wait this long after a keystroke before searching
---@field limit integer hits per search (1..100)
---@field stages table<string, boolean> stages checked before any choice was saved
---@field picker autodoc.PickerOptions
---@field keys autodoc.Keys
---@field progress boolean report indexing progress with vim.notify
---@field span_highlight_ms integer how long the jumped-to span stays highlighted (0: until moved)

local M = {}

---@type autodoc.Options
M.defaults = {
  cmd = { "autodoc", "serve" },
  root_markers = { ".autodoc", ".obsidian", "_schema", ".dendron.yml", ".zk" },
  vcs_markers = { ".git" },
  max_root_files = 5000,
  large_root = "ask",
  server = {},
  debounce_ms = 60,
  limit = 30,
  stages = { lexical = true, semantic = true, rerank = true },
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

--- `vim.validate` in its 0.11 form, or the table form on 0.10.
---@param name string
---@param value any
---@param validator string|function
---@param message? string
local function check(name, value, validator, message)
  if vim.fn.has("nvim-0.11") == 1 then
    vim.validate(name, value, validator, message)
  else
    vim.validate({ [name] = { value, validator, message } })
  end
end

---@param o autodoc.Options
local function validate(o)
  check("cmd", o.cmd, "table")
  check("root_markers", o.root_markers, "table")
  check("vcs_markers", o.vcs_markers, "table")
  check("max_root_files", o.max_root_files, function(v)
    return type(v) == "number" and v >= 0
  end, "a number >= 0")
  check("large_root", o.large_root, function(v)
    return v == "ask" or v == "folder" or v == "index"
  end, '"ask", "folder" or "index"')
  check("server", o.server, "table")
  check("debounce_ms", o.debounce_ms, "number")
  check("limit", o.limit, function(v)
    return type(v) == "number" and v >= 1 and v <= 100
  end, "a number 1..100")
  check("stages", o.stages, "table")
  check("picker", o.picker, "table")
  check("picker.list_width", o.picker.list_width, function(v)
    return type(v) == "number" and v >= 0.2 and v <= 0.8
  end, "a fraction 0.2..0.8")
  check("picker.group_by_file", o.picker.group_by_file, "boolean")
  check("keys", o.keys, "table")
  check("progress", o.progress, "boolean")
  check("span_highlight_ms", o.span_highlight_ms, "number")
  if #o.cmd == 0 then
    error("autodoc: cmd must name the sidecar command")
  end
end

--- Merge `opts` into the defaults; raise on a wrong type, remember unknown keys.
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
