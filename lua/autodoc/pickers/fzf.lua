---@mod autodoc.pickers.fzf AutoDoc in ibhagwan/fzf-lua.
---
--- Written to fzf-lua's documented `fzf_live` / `fzf_exec` API and not run here (neither fzf
--- nor fzf-lua can be installed on the project's machines): `search()` asks the sidecar for each
--- query, `related({ whole? })` and `find()` as the other adapters. Each line is
--- `path:line:1: label  breadcrumb`, so fzf-lua's file actions and previewer open the hit's line.

local sources = require("autodoc.sources")

local M = {}

---@param kind "search"|"related"|"find"
local function pick(kind, client, root, workspace, context, opts)
  local fzf = require("fzf-lua")
  local source = sources[kind]
  local checked = require("autodoc.picker").load_stages()

  local function contents(query)
    return function(fzf_cb)
      coroutine.wrap(function()
        local co = coroutine.running()
        local extra = sources.request_context(context, sources.stages(checked))
        vim.schedule(function()
          require("autodoc.client").request(
            client,
            source.method,
            source.params(workspace, query or "", extra),
            function(err, result)
              coroutine.resume(co, err, result)
            end
          )
        end)
        local err, result = coroutine.yield()
        for _, it in ipairs(not err and result and source.items(result, query or "") or {}) do
          fzf_cb(string.format("%s:%d:1: %s  %s", it.path, it.line_start, it.label, it.breadcrumb))
        end
        fzf_cb()
      end)()
    end
  end

  local spec = vim.tbl_deep_extend("force", {
    prompt = "AutoDoc " .. kind .. "> ",
    cwd = root,
    query = opts.query,
    previewer = "builtin",
    exec_empty_query = false,
    actions = fzf.defaults.actions.files,
  }, opts.fzf or {})
  if source.needs_query then
    fzf.fzf_live(contents, spec)
  else
    fzf.fzf_exec(contents(""), spec)
  end
end

local entries = sources.entries(pick)
M.search, M.related, M.find = entries.search, entries.related, entries.find

return M
