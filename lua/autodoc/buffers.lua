---@mod autodoc.buffers The notes a sidecar serves: every Markdown buffer under its root is
--- attached to its client the moment it starts (the note you started in, and any loaded
--- before), and each one opened or entered later, so completion, lenses, diagnostics and
--- re-indexing on save work in every note without `:e!`.

local M = {}

---@param fname string
---@return string
local function real(fname)
  return vim.uv.fs_realpath(fname) or fname
end

--- The note file a buffer holds (a loaded, normal Markdown buffer with a name), or nil.
---@param bufnr integer
---@return string?
local function note_file(bufnr)
  if
    not vim.api.nvim_buf_is_loaded(bufnr)
    or vim.bo[bufnr].buftype ~= ""
    or vim.bo[bufnr].filetype ~= "markdown"
  then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  return name ~= "" and real(vim.fn.fnamemodify(name, ":p")) or nil
end

--- Whether `bufnr` is a note of the knowledge base at `root`: its file lies under the root and
--- the root is the one found around it (a vault nested deeper is served by its own client;
--- a note outside every root is not given the cwd's).
---@param bufnr integer
---@param root string
---@return boolean
function M.serves(bufnr, root)
  local file = note_file(bufnr)
  if not file or file:sub(1, #root + 1) ~= root .. "/" then
    return false
  end
  return require("autodoc.client").root(bufnr) == root
end

---@param bufnr integer
---@param client vim.lsp.Client
local function attach(bufnr, client)
  if not vim.lsp.buf_is_attached(bufnr, client.id) then
    vim.lsp.buf_attach_client(bufnr, client.id)
  end
end

--- Attach a buffer to the running client of its root, if one runs (a team's server over
--- HTTP has no buffers).
---@param bufnr integer
function M.attach(bufnr)
  if not note_file(bufnr) then
    return
  end
  local client_mod = require("autodoc.client")
  local root = client_mod.root(bufnr)
  local client = client_mod.get(root)
  if client and not client.remote and M.serves(bufnr, root) then
    attach(bufnr, client)
  end
end

--- Attach every loaded note under the client's root: called as the sidecar starts.
---@param client vim.lsp.Client
function M.attach_all(client)
  if client.remote or not client.root_dir then
    return
  end
  local root = real(client.root_dir)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if M.serves(bufnr, root) then
      attach(bufnr, client)
    end
  end
end

local following = false

--- From now on, attach each Markdown buffer opened or entered under a served root.
function M.follow()
  if following then
    return
  end
  following = true
  vim.api.nvim_create_autocmd({ "FileType", "BufEnter" }, {
    group = vim.api.nvim_create_augroup("autodoc_buffers", { clear = true }),
    callback = function(ev)
      if ev.event == "BufEnter" or ev.match == "markdown" then
        M.attach(ev.buf)
      end
    end,
  })
end

return M
