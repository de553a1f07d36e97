---@mod autodoc AutoDoc: hybrid search over a Markdown knowledge base.
---
--- `require("autodoc").setup(opts)` is optional: every command works with the defaults.

local config = require("autodoc.config")

local M = {}

---@type table<string, string|vim.api.keyset.highlight> a link, or attributes
local HIGHLIGHTS = {
  AutodocMatch = "Search", -- the query's words in the preview
  AutodocSpan = "Visual", -- the hit's line span (preview, and after a jump)
  AutodocPath = "Directory",
  AutodocBreadcrumb = "Comment",
  AutodocRelevance = "Number",
  AutodocCheckOn = "DiagnosticOk",
  AutodocCheckOff = "NonText",
  AutodocLowConfidence = "WarningMsg",
  AutodocDidYouMean = "Question", -- the query with a word found nowhere corrected
  AutodocProgress = "DiagnosticInfo", -- indexing or embedding under way
  AutodocNotice = "WarningMsg", -- why a key did nothing (the last retriever stays checked)
  -- the selected row: its own attributes, not a link, so it shows without 'termguicolors' too
  -- (the default CursorLine has only a GUI background)
  AutodocSelected = { reverse = true, cterm = { reverse = true } },
}

--- Link AutoDoc's highlight groups, leaving any the user or colorscheme defined.
function M.highlights()
  for group, spec in pairs(HIGHLIGHTS) do
    local attrs = type(spec) == "string" and { link = spec } or vim.deepcopy(spec)
    attrs.default = true
    vim.api.nvim_set_hl(0, group, attrs)
  end
end

local initialized = false

local function init()
  if initialized then
    return
  end
  initialized = true
  M.highlights()
  local group = vim.api.nvim_create_augroup("autodoc", { clear = true })
  vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = M.highlights })
  vim.api.nvim_create_autocmd("LspProgress", {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      local value = ev.data.params and ev.data.params.value or {}
      if not config.options.progress or not client or client.name ~= "autodoc" then
        return
      end
      if value.kind == "begin" or value.kind == "end" then
        local text = value.kind == "begin" and value.title or ("indexed: " .. (value.message or ""))
        require("autodoc.notice").show(text) -- one line: never "Press ENTER"
      end
    end,
  })
  -- Markdown buffers inside a running sidecar's root attach to it, so a save re-indexes at once.
  require("autodoc.buffers").follow()
end

---@param opts? autodoc.Options|table
function M.setup(opts)
  config.setup(opts)
  init()
end

--- Open the search picker.
---@param opts? autodoc.SearchOpts
function M.search(opts)
  init()
  require("autodoc.picker").open(opts)
end

--- Start (or reuse) the sidecar for the current buffer's root, asking first when the root is
--- large; `callback(client)` once it runs.
---@param callback fun(client: vim.lsp.Client)
local function running(callback)
  init()
  local client_mod = require("autodoc.client")
  client_mod.choose_root(0, function(root)
    local client = root and client_mod.start(root)
    if client then
      callback(client)
    end
  end)
end

--- `:Autodoc status`: the sidecar's view of this knowledge base.
function M.status()
  running(M.show_status)
end

--- How long ago an epoch time was, in words.
---@param t number?
---@return string
local function ago(t)
  if not t or t == vim.NIL then
    return "never"
  end
  local s = math.max(0, os.time() - math.floor(t)) -- whole seconds: `indexed_at` has a fraction
  local span = s < 90 and (s .. " s")
    or s < 5400 and (math.floor(s / 60 + 0.5) .. " min")
    or s < 172800 and (math.floor(s / 3600 + 0.5) .. " h")
    or (math.floor(s / 86400 + 0.5) .. " days")
  return os.date("%Y-%m-%d %H:%M", math.floor(t)) .. " (" .. span .. " ago)"
end

--- `:Autodoc status` as lines a person reads: the sidecar and its lease, then per workspace its
--- root, index state and last index, size, semantic coverage and ranker.
---@param result autodoc.Status
---@return string[]
function M.status_lines(result)
  local count = require("autodoc.picker.render").thousands
  local server = result.server
  local lease = server.writer and "writer (this editor indexes the store)"
    or (server.lease .. ": the writer lease is held by " .. server.holder)
  local lines = {
    "AutoDoc " .. server.version .. " · sidecar pid " .. server.pid,
    "  store     " .. server.db,
    "  lease     " .. lease,
    "  pending   "
      .. count(server.pending)
      .. " edit"
      .. (server.pending == 1 and "" or "s")
      .. " waiting to be indexed"
      .. (server.watching and " · watching files" or ""),
  }
  for _, ws in ipairs(result.workspaces) do
    local cov = ws.semantic_coverage
    local semantic = ws.semantic
    if cov and cov ~= vim.NIL then
      semantic = string.format(
        "%s · %s of %s chunks embedded",
        semantic,
        count(cov.embedded),
        count(cov.total)
      )
    end
    if ws.semantic_reason and ws.semantic_reason ~= "" then
      semantic = semantic .. " (" .. ws.semantic_reason .. ")"
    end
    if ws.model and ws.model ~= "" then
      semantic = semantic .. " · " .. ws.model
    end
    local rank = ws.rank.state
      .. ((ws.rank.error or "") ~= "" and (" (" .. ws.rank.error .. ")") or "")
    vim.list_extend(lines, {
      "",
      "workspace " .. ws.name .. (ws.served and "" or " (not served here)") .. " · " .. ws.root,
      "  index     " .. ws.indexing .. " · last indexed " .. ago(ws.indexed_at),
      "  size      " .. count(ws.documents) .. " documents · " .. count(ws.chunks) .. " chunks",
      "  semantic  " .. semantic,
      "  rerank    " .. rank,
    })
  end
  for _, why in ipairs(result.refused or {}) do
    table.insert(lines, "refused   " .. why)
  end
  return lines
end

--- The status in a floating window (`q` or <Esc> closes it), readable whatever 'cmdheight'.
---@param client vim.lsp.Client
function M.show_status(client)
  local result, err = require("autodoc.client").request_sync(client, "workspace/executeCommand", {
    command = "autodoc.status",
    arguments = {},
  })
  if err then
    vim.notify("autodoc: " .. (err.message or "status failed"), vim.log.levels.ERROR)
    return
  end
  local lines = M.status_lines(result)
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, vim.o.columns - 4)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = math.min(#lines, vim.o.lines - 4),
    row = 1,
    col = math.floor((vim.o.columns - width) / 2),
    border = "rounded",
    title = " AutoDoc status ",
    style = "minimal",
  })
  vim.wo[win].wrap = true
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, "<cmd>close<cr>", { buffer = buf, nowait = true })
  end
end

--- `:Autodoc reindex`: walk the root again.
function M.reindex()
  running(function(client)
    require("autodoc.client").request(client, "workspace/executeCommand", {
      command = "autodoc.reindex",
      arguments = {},
    }, function(err)
      if err then
        vim.notify("autodoc: " .. err.message, vim.log.levels.ERROR)
      end
    end)
  end)
end

--- The text of the visual selection (or of the last one, after it ended), on one line.
---@return string
local function selection()
  local mode = vim.fn.mode()
  local visual = mode == "v" or mode == "V" or mode == "\22"
  local first, last = vim.fn.getpos(visual and "v" or "'<"), vim.fn.getpos(visual and "." or "'>")
  local lines = vim.fn.getregion(first, last, { type = visual and mode or vim.fn.visualmode() })
  return vim.trim((table.concat(lines, " "):gsub("%s+", " ")))
end

--- `:AutodocRelated`: the picker over the sections related to the one under the cursor (with
--- `whole`, to the whole document), from the stored vectors and the links.
---@param opts? { whole: boolean? }
function M.related(opts)
  init()
  local client_mod = require("autodoc.client")
  local file = vim.api.nvim_buf_get_name(0)
  if file == "" or vim.bo.buftype ~= "" then
    vim.notify("autodoc: :AutodocRelated needs a note of the knowledge base", vim.log.levels.WARN)
    return
  end
  local line = not (opts and opts.whole) and vim.api.nvim_win_get_cursor(0)[1] or nil
  client_mod.choose_root(0, function(root)
    local real = vim.uv.fs_realpath(file) or file
    if not root or real:sub(1, #root + 1) ~= root .. "/" then
      vim.notify("autodoc: " .. file .. " is not under " .. tostring(root), vim.log.levels.WARN)
      return
    end
    require("autodoc.picker").open({
      root = root,
      source = "related",
      context = { path = real:sub(#root + 2), line = line },
    })
  end)
end

--- `:AutodocFind [name]`: the picker over titles, aliases, headings and identifiers by name.
---@param opts? { query: string? }
function M.find(opts)
  M.search({ source = "find", query = opts and opts.query or nil })
end

--- `:Autodoc open`: the picker with the word under the cursor, or with the visual selection
--- (from visual mode, or `:'<,'>Autodoc open`).
---@param opts? { range: boolean? }
function M.open(opts)
  local mode = vim.fn.mode()
  local visual = mode == "v" or mode == "V" or mode == "\22"
  local query = (visual or (opts and opts.range)) and selection() or vim.fn.expand("<cword>")
  if visual then
    vim.api.nvim_feedkeys(vim.keycode("<Esc>"), "nx", false)
  end
  M.search({ query = query })
end

--- `:Autodoc workspace`: start (or show) the sidecar for the current root.
function M.workspace()
  running(function(client)
    require("autodoc.notice").show("serving " .. client.root_dir)
  end)
end

--- `:Autodoc rename [name]`: this note's own file renamed (asked for when no name is given),
--- every link to it rewritten by the sidecar (`autodoc.renameFile`, applied as one edit): the
--- way to rename a note that is not named after its title, as every Dendron note.
---@param opts? { args: string? }
function M.rename(opts)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = vim.lsp.get_clients({ bufnr = bufnr, name = "autodoc" })[1]
  if not client then
    require("autodoc.notice").show("this note is not attached to the sidecar")
    return
  end
  local function rename(name)
    require("autodoc.client").request(client, "workspace/executeCommand", {
      command = "autodoc.renameFile",
      arguments = { vim.uri_from_bufnr(bufnr), name },
    }, function(err, result)
      if err then
        vim.notify("autodoc: " .. err.message, vim.log.levels.ERROR)
      elseif result then
        local shown = ("renamed to %s, %d links rewritten"):format(result.new_path, result.links)
        require("autodoc.notice").show(shown)
      end
    end)
  end
  local name = opts and opts.args or ""
  if name ~= "" then
    return rename(name)
  end
  vim.ui.input({ prompt = "Rename note file: ", default = vim.fn.expand("%:t:r") }, function(typed)
    if typed and typed ~= "" then
      rename(typed)
    end
  end)
end

M.subcommands = { "status", "reindex", "open", "workspace", "rename" }

return M
