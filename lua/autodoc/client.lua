---@mod autodoc.client Start or reuse the sidecar (one LSP client per root) and talk to it.

local config = require("autodoc.config")

local M = {}

local NAME = "autodoc"

--- Per client id: the workspaces from the last `autodoc/indexReady` (served ones first).
---@type table<integer, autodoc.WorkspaceState[]>
M.ready = {}

---@param fname string
---@return string
local function real(fname)
  return vim.uv.fs_realpath(fname) or fname
end

--- The knowledge base around a buffer: a folder with a root marker, else the cwd.
---@param bufnr? integer
---@return string
function M.root(bufnr)
  local found = vim.fs.root(bufnr or 0, config.options.root_markers)
  return real(found or vim.uv.cwd())
end

---@param event string
---@param data table
local function fire(event, data)
  vim.api.nvim_exec_autocmds("User", { pattern = event, modeline = false, data = data })
end

--- The sidecar's notifications; `lsp/autodoc.lua` uses them too.
---@type table<string, lsp.Handler>
M.handlers = {
  ["autodoc/indexReady"] = function(_, result, ctx)
    M.ready[ctx.client_id] = result and result.workspaces or {}
    fire("AutodocIndexReady", { client_id = ctx.client_id, result = result })
  end,
  ["autodoc/stateChanged"] = function(_, result, ctx)
    fire("AutodocStateChanged", { client_id = ctx.client_id, result = result })
  end,
}

--- The running client for `root`, if any.
---@param root string
---@return vim.lsp.Client?
function M.get(root)
  for _, client in ipairs(vim.lsp.get_clients({ name = NAME })) do
    if client.root_dir and real(client.root_dir) == root then
      return client
    end
  end
end

--- Start the sidecar for `root`, or reuse the one already running there.
---@param root? string
---@param bufnr? integer a buffer to attach (its saves re-index at once)
---@return vim.lsp.Client?
function M.start(root, bufnr)
  root = root or M.root()
  local existing = M.get(root)
  if existing then
    if bufnr and not vim.lsp.buf_is_attached(bufnr, existing.id) then
      vim.lsp.buf_attach_client(bufnr, existing.id)
    end
    return existing
  end
  local opts = config.options
  local init_options = next(opts.server) and opts.server or vim.empty_dict()
  local id = vim.lsp.start({
    name = NAME,
    cmd = opts.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    init_options = init_options,
    handlers = M.handlers,
  }, {
    bufnr = bufnr,
    attach = bufnr ~= nil,
    reuse_client = function(client, conf)
      return client.name == NAME and client.root_dir == conf.root_dir
    end,
  })
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- Send a request; `callback(err, result)` runs on the main loop. Returns a cancel function.
---@param client vim.lsp.Client
---@param method string
---@param params any
---@param callback fun(err: table?, result: any)
---@return fun() cancel
function M.request(client, method, params, callback)
  local handler = function(err, result)
    callback(err, result)
  end
  local ok, request_id
  if vim.fn.has("nvim-0.11") == 1 then
    ok, request_id = client:request(method, params, handler)
  else
    ---@diagnostic disable-next-line: param-type-mismatch
    ok, request_id = client.request(method, params, handler)
  end
  if not ok then
    callback({ code = -32603, message = "the sidecar is not running" }, nil)
    return function() end
  end
  return function()
    if vim.fn.has("nvim-0.11") == 1 then
      client:cancel_request(request_id)
    else
      ---@diagnostic disable-next-line: param-type-mismatch
      client.cancel_request(request_id)
    end
  end
end

--- A synchronous request (health check, commands); nil and the error on failure.
---@param client vim.lsp.Client
---@param method string
---@param params any
---@param timeout_ms? integer
---@return any result, table? err
function M.request_sync(client, method, params, timeout_ms)
  local response, err
  if vim.fn.has("nvim-0.11") == 1 then
    response, err = client:request_sync(method, params, timeout_ms or 5000)
  else
    ---@diagnostic disable-next-line: param-type-mismatch
    response, err = client.request_sync(method, params, timeout_ms or 5000)
  end
  if not response then
    return nil, { message = tostring(err) }
  end
  if response.err then
    return nil, response.err
  end
  return response.result, nil
end

--- The workspace name the sidecar gave `root` (from indexReady, else `workspace.list`).
---@param client vim.lsp.Client
---@param root string
---@param callback fun(name: string?)
function M.workspace(client, root, callback)
  for _, ws in ipairs(M.ready[client.id] or {}) do
    if ws.served and real(ws.root) == root then
      return callback(ws.name)
    end
  end
  M.request(client, "autodoc/workspace.list", {}, function(err, result)
    if err or type(result) ~= "table" then
      return callback(nil)
    end
    for _, ws in ipairs(result) do
      if real(ws.root) == root then
        return callback(ws.name)
      end
    end
    callback(nil)
  end)
end

return M
