---@mod autodoc.picker.search Asking the sidecar as you type: after `debounce_ms`, the latest
--- query wins (the request in flight is cancelled), and each answer is listed.

local client_mod = require("autodoc.client")
local config = require("autodoc.config")
local render = require("autodoc.picker.render")
local state = require("autodoc.picker.state")

local M = {}

--- Keystroke-to-results latencies (ms), newest last; read by the benchmark and tests.
---@type number[]
M.latencies = {}

--- An answer was listed: say so to `User AutodocResults` listeners.
local function announce()
  vim.api.nvim_exec_autocmds("User", { pattern = "AutodocResults", modeline = false })
end

--- Ask for a search and list its hits.
---@param S autodoc.PickerState
---@param seq integer
local function ask_search(S, seq)
  local opts = { limit = config.options.limit, stages = state.requested(S) }
  S.cancel = client_mod.request(
    S.client,
    "autodoc/search.query",
    { S.workspace, S.query, opts },
    function(err, result)
      local cur = state.current
      if not cur or seq ~= cur.seq then
        return -- a newer query was sent meanwhile
      end
      cur.cancel = nil
      if err then
        if err.code == -32800 then
          return -- superseded
        end
        cur.error = err.message
        cur.hits = {}
      else
        cur.error, cur.answer, cur.hits = nil, result, result.hits
      end
      render.list(cur)
      local typed = cur.typed_at[seq]
      if typed then
        table.insert(M.latencies, (vim.uv.hrtime() - typed) / 1e6)
        cur.typed_at[seq] = nil
      end
      announce()
    end
  )
end

--- Ask the picker's source (find, related) and list its items.
---@param S autodoc.PickerState
---@param seq integer
local function ask_source(S, seq)
  local source, query = S.source, S.query
  local ctx = vim.tbl_extend("force", S.context, { limit = config.options.limit })
  S.cancel = client_mod.request(
    S.client,
    source.method,
    source.params(S.workspace, query, ctx),
    function(err, result)
      local cur = state.current
      if not cur or seq ~= cur.seq then
        return
      end
      cur.cancel = nil
      if err then
        cur.error, cur.hits, cur.status = err.message, {}, ""
      else
        cur.error, cur.source_answer = nil, result
        cur.hits = source.items(result, query)
        cur.status = source.describe(result, cur.hits)
      end
      render.list(cur)
      announce()
    end
  )
end

--- Search for the query now, dropping the request in flight.
function M.now()
  local S = state.current
  if not S then
    return
  end
  if S.timer then
    S.timer:stop()
  end
  if S.cancel then
    S.cancel() -- the latest query wins: drop the one in flight
    S.cancel = nil
  end
  S.seq = S.seq + 1
  local seq = S.seq
  if S.query:match("^%s*$") and (not S.source or S.source.needs_query) then
    S.hits, S.error = {}, nil
    render.list(S)
    return
  end
  if not S.workspace then
    return -- searched once the workspace is known
  end
  S.typed_at[seq], S.typed = S.typed, nil
  S.searched_at = vim.uv.hrtime()
  if S.source then
    return ask_source(S, seq)
  end
  ask_search(S, seq)
end

--- The query field changed: search once typing pauses for `debounce_ms`.
function M.soon()
  local S = state.current
  if not S then
    return
  end
  S.typed = vim.uv.hrtime()
  S.query = vim.api.nvim_buf_get_lines(S.bufs.prompt, 0, 1, false)[1] or ""
  S.timer = S.timer or vim.uv.new_timer()
  S.timer:stop()
  S.timer:start(
    config.options.debounce_ms,
    0,
    vim.schedule_wrap(function()
      if state.current then
        M.now()
      end
    end)
  )
end

--- Learn the workspace the sidecar gave `root`, then search in it.
---@param client vim.lsp.Client
---@param root string
function M.in_workspace(client, root)
  client_mod.workspace(client, root, function(name)
    local S = state.current
    if S and name then
      S.workspace = name
      M.now()
    end
  end)
end

return M
