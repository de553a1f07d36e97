---@mod autodoc.picker.search Asking the sidecar as you type: on every keystroke (after
--- `debounce_ms`, 0 by default) the latest query wins (the request in flight is cancelled with
--- `$/cancelRequest`), and each answer is listed. Every request
--- goes through the picker's `autodoc.sources` source, as the other pickers' adapters do.

local client_mod = require("autodoc.client")
local config = require("autodoc.config")
local render = require("autodoc.picker.render")
local sources = require("autodoc.sources")
local state = require("autodoc.picker.state")

local M = {}

--- Keystroke-to-results latencies (ms), newest last; read by the benchmark and tests.
---@type number[]
M.latencies = {}

-- The sidecar stopped a search because a newer one from this client superseded it.
local REQUEST_CANCELLED = -32800

--- Take a source's answer (or its error) into the picker's state.
---@param S autodoc.PickerState
---@param source autodoc.Source
---@param query string the query it answers
---@param err table?
---@param result table?
local function accept(S, source, query, err, result)
  if err then
    S.error, S.hits, S.status = err.message, {}, ""
    return
  end
  S.error = nil
  if S.mode then -- find, related: their own answers, shown by the status line
    S.source_answer = result
  else
    S.answer = result
  end
  S.hits = source.items(result, query)
  S.status = source.describe(result, S.hits)
end

--- Ask the picker's source (a search, find, related) and list its items.
---@param S autodoc.PickerState
---@param seq integer
local function ask(S, seq)
  local source, query = S.source, S.query
  local ctx = sources.request_context(S.context, state.requested(S))
  S.cancel = client_mod.request(
    S.client,
    source.method,
    source.params(S.workspace, query, ctx),
    function(err, result)
      local cur = state.current
      if not cur or seq ~= cur.seq then
        return -- a newer query was sent meanwhile
      end
      cur.cancel = nil
      if err and err.code == REQUEST_CANCELLED then
        return -- superseded
      end
      accept(cur, source, query, err, result)
      render.list(cur)
      local typed = cur.typed_at[seq]
      if typed then
        table.insert(M.latencies, (vim.uv.hrtime() - typed) / 1e6)
        cur.typed_at[seq] = nil
      end
      vim.api.nvim_exec_autocmds("User", { pattern = "AutodocResults", modeline = false })
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
  if S.query:match("^%s*$") and S.source.needs_query then
    -- nothing asked: no answer, so no intent in the title and no summary from the last one
    S.hits, S.error, S.answer = {}, nil, nil
    render.list(S)
    return
  end
  if not S.workspace then
    return -- searched once the workspace is known
  end
  S.typed_at[seq], S.typed = S.typed, nil
  S.searched_at = vim.uv.hrtime()
  ask(S, seq)
end

--- The query field changed: search once typing pauses for `debounce_ms`.
function M.soon()
  local S = state.current
  if not S then
    return
  end
  S.typed = vim.uv.hrtime()
  S.notice = nil -- said once, until the next key
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
