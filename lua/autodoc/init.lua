---@mod autodoc AutoDoc: hybrid search over a Markdown knowledge base.
---
--- `require("autodoc").setup(opts)` is optional: every command works with the defaults.

local config = require("autodoc.config")

local M = {}

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
}

--- Link AutoDoc's highlight groups, leaving any the user or colorscheme defined.
function M.highlights()
  for group, link in pairs(HIGHLIGHTS) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
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
        vim.notify("autodoc: " .. text, vim.log.levels.INFO)
      end
    end,
  })
  -- Markdown buffers inside a running sidecar's root attach to it, so a save re-indexes at once.
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "markdown",
    callback = function(ev)
      local client_mod = require("autodoc.client")
      local client = client_mod.get(client_mod.root(ev.buf))
      if client and not vim.lsp.buf_is_attached(ev.buf, client.id) then
        vim.lsp.buf_attach_client(ev.buf, client.id)
      end
    end,
  })
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
  local lines = { "AutoDoc sidecar pid " .. result.server.pid .. ", store " .. result.server.db }
  table.insert(
    lines,
    result.server.writer and "writer" or ("read-only, lease held by " .. result.server.holder)
  )
  for _, ws in ipairs(result.workspaces) do
    table.insert(
      lines,
      string.format(
        "%s: %s, %d documents, %d chunks, semantic %s, rank %s (%s)",
        ws.name,
        ws.indexing,
        ws.documents,
        ws.chunks,
        ws.semantic,
        ws.rank.state,
        ws.root
      )
    )
  end
  vim.notify(table.concat(lines, "\n"), vim.log.levels.INFO)
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
    vim.notify("autodoc: serving " .. client.root_dir, vim.log.levels.INFO)
  end)
end

M.subcommands = { "status", "reindex", "open", "workspace" }

return M
