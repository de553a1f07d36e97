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

--- The remote server's settings when `setup({ server = { url = ... } })` names one.
---@return table?
local function remote_opts()
  local s = config.options.server
  return type(s) == "table" and type(s.url) == "string" and s or nil
end

--- Per client id, per root: the latest `autodoc/indexProgress` (nil once indexReady came).
---@type table<integer, table<string, autodoc.IndexProgress>>
M.progress = {}

--- Large roots the user already decided about this session: root -> "index" or "folder".
---@type table<string, string>
M.decided = {}

---@param bufnr integer
---@return string
local function folder_of(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or vim.bo[bufnr].buftype ~= "" then
    return real(vim.uv.cwd())
  end
  return real(vim.fs.dirname(vim.fn.fnamemodify(name, ":p")))
end

--- The knowledge base around a buffer, without asking: the nearest folder with a vault marker
--- (`.autodoc`, `.obsidian`, `_schema`, ...), else the nearest repository root, else the cwd;
--- a large root the user chose not to index gives the note's own folder.
---@param bufnr? integer
---@return string root, string how "vault", "repository" or "cwd"
function M.root(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local opts = config.options
  local root, how = vim.fs.root(bufnr, opts.root_markers), "vault"
  if not root then
    root = #opts.vcs_markers > 0 and vim.fs.root(bufnr, opts.vcs_markers) or nil
    how = root and "repository" or "cwd"
  end
  root = real(root or vim.uv.cwd())
  if M.decided[root] == "folder" then
    return folder_of(bufnr), "folder"
  end
  return root, how
end

--- How many Markdown files `root` holds, counting no further than `limit` + 1 (hidden folders
--- skipped, as the sidecar does) and visiting at most 40 entries per allowed file.
---@param root string
---@param limit integer
---@return integer count, boolean over
function M.count_markdown(root, limit)
  local count, seen, budget = 0, 0, math.max(limit, 1) * 40
  local walk = vim.fs.dir(root, {
    depth = 64,
    skip = function(name)
      return name:sub(1, 1) ~= "."
    end,
  })
  for name, kind in walk do
    seen = seen + 1
    if
      kind == "file"
      and name:sub(1, 1) ~= "."
      and (name:match("%.md$") or name:match("%.markdown$"))
    then
      count = count + 1
    end
    if count > limit or seen > budget then
      return count, true
    end
  end
  return count, false
end

--- The root to serve for a buffer; over `max_root_files` Markdown files, `large_root` says
--- whether to ask (vim.ui.select), index the note's folder, or index the whole root.
---@param bufnr? integer
---@param callback fun(root: string?) nil: the user cancelled
function M.choose_root(bufnr, callback)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local opts = config.options
  local root, how = M.root(bufnr)
  local nothing_indexed_here = remote_opts() ~= nil -- a team's server indexes, not this machine
  if how == "folder" or M.decided[root] or M.get(root) or opts.max_root_files == 0 then
    return callback(root)
  end
  if nothing_indexed_here then
    return callback(root)
  end
  local _, over = M.count_markdown(root, opts.max_root_files)
  if not over then
    return callback(root)
  end
  local folder = folder_of(bufnr)
  local function decide(choice)
    M.decided[root] = choice
    callback(choice == "folder" and folder or root)
  end
  if opts.large_root ~= "ask" or folder == root then
    return decide(opts.large_root == "folder" and folder ~= root and "folder" or "index")
  end
  local size = "more than " .. opts.max_root_files
  local found_by = ({ vault = "a vault marker", repository = "its .git" })[how]
    or "being the current directory"
  local choices = {
    "Index only this note's folder: " .. folder,
    "Index all of " .. root .. " (" .. size .. " Markdown files)",
  }
  vim.ui.select(choices, {
    prompt = "autodoc: "
      .. root
      .. " (found by "
      .. found_by
      .. ") holds "
      .. size
      .. " Markdown files. Index:",
  }, function(_, idx)
    if idx == 1 then
      decide("folder")
    elseif idx == 2 then
      decide("index")
    else
      callback(nil)
    end
  end)
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
    M.progress[ctx.client_id] = nil
    fire("AutodocIndexReady", { client_id = ctx.client_id, result = result })
  end,
  ["autodoc/indexProgress"] = function(_, result, ctx)
    local by_root = M.progress[ctx.client_id] or {}
    M.progress[ctx.client_id] = by_root
    by_root[real(result.root)] = result
    fire("AutodocIndexProgress", { client_id = ctx.client_id, result = result })
  end,
  ["autodoc/stateChanged"] = function(_, result, ctx)
    fire("AutodocStateChanged", { client_id = ctx.client_id, result = result })
  end,
}

-- -- a team's server over HTTP (`server = { url = ..., token_env = ... }`) ------------------

--- A stand-in for an LSP client that talks to `autodoc serve --http` (JSON-RPC at its URL):
--- the picker and the adapters call `M.request` on it as on a local sidecar.
---@param root string
---@return table
local function remote_client(root)
  local s = remote_opts() or {}
  M.remote = M.remote or { id = -1, name = NAME, remote = true }
  M.remote.root_dir = s.root
      and (vim.uv.fs_realpath(vim.fn.expand(s.root)) or vim.fn.expand(s.root))
    or root
  return M.remote
end

-- Writes over HTTP: never sent twice (every other method reads, and is safe to repeat).
local HTTP_WRITES = { ["index.run"] = true, ["index.check"] = true }

--- One JSON-RPC call over HTTP with curl; `callback(err, result)` on the main loop. The token
--- travels in a header read from `token_env`, never on the command line. A read is tried again
--- on what a busy or restarting server answers (503 or 429, after their `Retry-After`) and on a
--- connection dropped without an answer (a team server's worker that died mid-request).
---@return fun() cancel
local function http_request(method, params, callback)
  local s = remote_opts() or {}
  local name = method:gsub("^autodoc/", "")
  local body = vim.json.encode({ jsonrpc = "2.0", id = 1, method = name, params = params })
  local token = s.token_env and os.getenv(s.token_env) or nil
  -- The answer goes to a file: curl empties it before it tries again (on stdout the refused
  -- answers would come first).
  local answer_file = vim.fn.tempname()
  local cmd = { "curl", "-sS", "--max-time", "30", "-X", "POST", "-o", answer_file }
  vim.list_extend(cmd, { "-H", "Content-Type: application/json" })
  if not HTTP_WRITES[name] then
    vim.list_extend(cmd, { "--retry", "3", "--retry-all-errors", "--retry-max-time", "20" })
  end
  if token then
    vim.list_extend(cmd, { "-H", "@-" })
  end
  vim.list_extend(cmd, { "--data-binary", body, s.url })
  local job = vim.system(cmd, {
    text = true,
    stdin = token and ("Authorization: Bearer " .. token .. "\n") or nil,
  }, function(out)
    vim.schedule(function()
      local read = io.open(answer_file, "r")
      local text = read and read:read("*a") or ""
      if read then
        read:close()
      end
      os.remove(answer_file)
      local ok, reply = pcall(vim.json.decode, text)
      if out.code ~= 0 or not ok or type(reply) ~= "table" then
        callback(
          { code = -32603, message = "the server did not answer: " .. (out.stderr or "") },
          nil
        )
      elseif reply.error then
        callback(reply.error, nil)
      else
        callback(nil, reply.result)
      end
    end)
  end)
  return function()
    pcall(job.kill, job, 15)
  end
end

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

--- Start the sidecar for `root`, or reuse the one already running there; either way every
--- Markdown buffer under the root is attached to it (the current one too), and those opened
--- later will be.
---@param root? string
---@return vim.lsp.Client?
function M.start(root)
  root = root or M.root()
  if remote_opts() then
    return remote_client(root) --[[@as vim.lsp.Client]]
  end
  local buffers = require("autodoc.buffers")
  buffers.follow()
  local existing = M.get(root)
  if existing then
    buffers.attach_all(existing)
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
    attach = false,
    reuse_client = function(client, conf)
      return client.name == NAME and client.root_dir == conf.root_dir
    end,
  })
  local client = id and vim.lsp.get_client_by_id(id) or nil
  if client then
    buffers.attach_all(client)
  end
  return client
end

--- Send a request; `callback(err, result)` runs on the main loop. Returns a cancel function.
---@param client vim.lsp.Client
---@param method string
---@param params any
---@param callback fun(err: table?, result: any)
---@return fun() cancel
function M.request(client, method, params, callback)
  if client.remote then
    return http_request(method, params, callback)
  end
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
  local s = remote_opts()
  if client.remote and s then -- the server's one workspace, or the one named
    if s.workspace then
      return callback(s.workspace)
    end
    return M.request(client, "autodoc/workspace.list", {}, function(err, result)
      callback(not err and type(result) == "table" and #result == 1 and result[1].name or nil)
    end)
  end
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
