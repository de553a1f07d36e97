---@mod autodoc.sources What a picker lists: search hits (`search.query`), names
--- (`search.find`) and related sections (`related`). One request and one conversion each, so
--- the built-in picker and the adapters for other pickers ask the same and show the same items.

local registry = require("autodoc.stages")

local M = {}

--- The stages a client may switch on and off, in pipeline order (the registry's toggles): the
--- built-in picker's boxes, the adapters' toggles, `keys.<stage>` and `stages.<stage>`.
---@type string[]
M.toggles = {}
--- The stages that find candidates: a search always asks for at least one of them.
---@type string[]
M.retrievers = {}
for _, stage in ipairs(registry) do
  if stage.toggle then
    table.insert(M.toggles, stage.name)
  end
  if stage.retriever then
    table.insert(M.retrievers, stage.name)
  end
end

--- Tell the sidecar a search's hit was opened (`search.opened`): one that logs the questions
--- it answers counts the question as answered (doc/gaps.md). Nothing for find and related, and
--- nothing waits for the answer.
---@param client table the sidecar's client
---@param workspace string?
---@param source autodoc.Source
---@param item table? the opened item (`path`, `line`)
function M.opened(client, workspace, source, item)
  if client and workspace and item and source == M.search then
    local params = { workspace, item.path, item.line or item.line_start }
    require("autodoc.client").request(client, "autodoc/search.opened", params, function() end)
  end
end

--- Whether `names` holds a retriever.
---@param names string[]
---@return boolean
function M.has_retriever(names)
  for _, name in ipairs(names) do
    if vim.tbl_contains(M.retrievers, name) then
      return true
    end
  end
  return false
end

---@class autodoc.Item
---@field path string root-relative
---@field line integer the line the row shows and jumps to (a heading, a name's own line)
---@field line_start integer
---@field line_end integer
---@field breadcrumb string what the list shows after `path:line`
---@field label string the left column: a relevance, a match kind, a similarity
---@field snippet string?

---@class autodoc.Source
---@field method string the sidecar request
---@field needs_query boolean nothing is asked before something is typed
---@field params fun(workspace: string, query: string, ctx: table): table
---@field items fun(result: table, query: string): autodoc.Item[]
---@field describe fun(result: table, items: autodoc.Item[]): string the status line

--- Every word of `query` is in the item's path or breadcrumb (case-insensitive).
---@param item autodoc.Item
---@param query string
---@return boolean
local function matches(item, query)
  local hay = (item.path .. " " .. item.breadcrumb):lower()
  for word in query:lower():gmatch("%S+") do
    if not hay:find(word, 1, true) then
      return false
    end
  end
  return true
end

--- A search's items are its hits (`autodoc.Hit`, every field kept), each with its label.
---@type autodoc.Source
M.search = {
  method = "autodoc/search.query",
  needs_query = true,
  params = function(workspace, query, ctx)
    return { workspace, query, { limit = ctx.limit, stages = ctx.stages } }
  end,
  items = function(result)
    local out = {}
    for _, h in ipairs(result.hits or {}) do
      local label = h.via and h.via[1] == "facet" and "   ·" or string.format("%.2f", h.relevance)
      table.insert(
        out,
        vim.tbl_extend("force", h, { label = label, line = h.line or h.line_start })
      )
    end
    return out
  end,
  describe = function(result, items)
    local text =
      string.format("%d hits · %s · %.0f ms", #items, result.mode_used, result.took_ms or 0)
    for _, part in ipairs(M.doubts(result)) do
      text = text .. part[1]
    end
    return text
  end,
}

--- What an answer says about itself from absolute evidence, not from relevance, as (text,
--- highlight group) parts of a status line: the words found nowhere, a confidence below high,
--- the spelling it searched instead. Every picker shows them.
---@param a autodoc.Answer
---@return string[][]
function M.doubts(a)
  local out, doubt = {}, ""
  if a.missing and #a.missing > 0 then
    doubt = " · missing: " .. table.concat(a.missing, ", ")
  end
  if a.confidence and a.confidence ~= "high" then
    doubt = doubt .. " · confidence " .. a.confidence
  end
  if doubt ~= "" then
    table.insert(out, { doubt, "AutodocLowConfidence" })
  end
  if a.did_you_mean and a.did_you_mean ~= vim.NIL then
    table.insert(out, { " · did you mean: " .. a.did_you_mean, "AutodocDidYouMean" })
  end
  return out
end

--- The stages a search asks for, from a choice of checked boxes: never no retriever (with
--- none checked, the first one answers).
---@param checked table<string, boolean>
---@return string[]
function M.stages(checked)
  local out = {}
  for _, s in ipairs(M.toggles) do
    if checked[s] then
      table.insert(out, s)
    end
  end
  if not M.has_retriever(out) then
    table.insert(out, 1, M.retrievers[1])
  end
  return out
end

--- "Lexical and Semantic": the retrievers as their boxes name them.
---@return string
local function retriever_names()
  local names = vim.tbl_map(function(s)
    return s:sub(1, 1):upper() .. s:sub(2)
  end, M.retrievers)
  return table.concat(names, ", ", 1, #names - 1) .. " and " .. names[#names]
end

--- Flip `stage` in `checked` (in place), unless that would leave no retriever that can run
--- checked or the stage cannot run now: then nothing changes and the reason comes back, for
--- the picker to show where the user is looking.
---@param checked table<string, boolean>
---@param stage string
---@param can_run fun(stage: string): boolean
---@return string? refused why nothing changed
function M.flip(checked, stage, can_run)
  if not can_run(stage) then
    return stage .. " cannot run here"
  end
  if checked[stage] and vim.tbl_contains(M.retrievers, stage) then
    local others = vim.tbl_filter(function(s)
      return s ~= stage and checked[s] and can_run(s)
    end, M.retrievers)
    if #others == 0 then
      return "one of " .. retriever_names() .. " stays checked"
    end
  end
  checked[stage] = not checked[stage]
  return nil
end

--- What every picker adds to its source's context for one request: the configured limit and
--- the stages to ask for.
---@param context table the source's own context (a path and line for related)
---@param stages string[]
---@return table
function M.request_context(context, stages)
  return vim.tbl_extend("force", context, {
    limit = require("autodoc.config").options.limit,
    stages = stages,
  })
end

--- The client, root and workspace around the current buffer, for an adapter to open its
--- picker with (asking about a large root first, as the built-in picker does).
---@param callback fun(client: vim.lsp.Client, root: string, workspace: string)
function M.with_workspace(callback)
  local client_mod = require("autodoc.client")
  client_mod.choose_root(0, function(root)
    local client = root and client_mod.start(root)
    if not client then
      return
    end
    local function ready(tries)
      client_mod.workspace(client, root, function(name)
        if name then
          callback(client, root, name)
        elseif tries > 0 then -- the sidecar is still adding the folder
          vim.defer_fn(function()
            ready(tries - 1)
          end, 200)
        else
          vim.notify("autodoc: no workspace for " .. root, vim.log.levels.ERROR)
        end
      end)
    end
    ready(50)
  end)
end

--- The related source's request context for the current buffer: its path under `root` and the
--- cursor's line (nil with `whole`), or nil when the buffer is not a note under the root.
---@param root string
---@param whole boolean?
---@return table?
function M.here(root, whole)
  local file = vim.api.nvim_buf_get_name(0)
  local real = file ~= "" and (vim.uv.fs_realpath(file) or file) or ""
  if real:sub(1, #root + 1) ~= root .. "/" then
    return nil
  end
  return {
    path = real:sub(#root + 2),
    line = not whole and vim.api.nvim_win_get_cursor(0)[1] or nil,
  }
end

--- The three entry points of a picker adapter (`search`, `related`, `find`), over its
--- `pick(kind, client, root, workspace, context, opts)`; related's context is the section
--- under the cursor (`opts.whole`: the note).
---@param pick fun(kind: string, client: vim.lsp.Client, root: string, workspace: string, context: table, opts: table)
---@return table<string, fun(opts: table?)>
function M.entries(pick)
  local function open(kind)
    return function(opts)
      opts = opts or {}
      M.with_workspace(function(client, root, workspace)
        local context = kind == "related" and M.here(root, opts.whole) or {}
        if not context then
          vim.notify("autodoc: this buffer is not a note under " .. root, vim.log.levels.WARN)
          return
        end
        pick(kind, client, root, workspace, context, opts)
      end)
    end
  end
  return { search = open("search"), related = open("related"), find = open("find") }
end

---@type autodoc.Source
M.find = {
  method = "autodoc/search.find",
  needs_query = true,
  params = function(workspace, query, ctx)
    return { workspace, query, { limit = ctx.limit } }
  end,
  items = function(result)
    local out = {}
    for _, m in ipairs(result.matches or {}) do
      table.insert(out, {
        path = m.path,
        line = m.line or m.line_start, -- the name's own line, not its section's first
        line_start = m.line_start or m.line,
        line_end = m.line_end or m.line,
        breadcrumb = m.name
          .. " · "
          .. m.kind
          .. (m.breadcrumb and (" · " .. m.breadcrumb) or ""),
        label = m.match, -- exact, prefix, partial
      })
    end
    return out
  end,
  describe = function(result, items)
    return string.format(
      "find · %d matches · %.1f ms%s",
      #items,
      result.took_ms or 0,
      result.truncated and " · truncated: a longer name narrows it" or ""
    )
  end,
}

---@param hit table an `autodoc.RelatedHit`
---@return string
local function reasons(hit)
  local out = {}
  for _, r in ipairs(hit.reasons or {}) do
    if r == "similar" and hit.similarity ~= vim.NIL and hit.similarity then
      table.insert(out, string.format("similar %.2f", hit.similarity))
    elseif r == "shares links" then
      local n = hit.shared_links or 0
      table.insert(out, string.format("shares %d link%s", n, n == 1 and "" or "s"))
    else
      table.insert(out, r)
    end
  end
  return table.concat(out, ", ")
end

---@type autodoc.Source
M.related = {
  method = "autodoc/related",
  needs_query = false,
  params = function(workspace, _, ctx)
    return { workspace, ctx.path, ctx.line or vim.NIL, { limit = ctx.limit } }
  end,
  items = function(result, query)
    local out = {}
    for _, h in ipairs(result.hits or {}) do
      local item = {
        path = h.path,
        line = h.line or h.line_start,
        line_start = h.line_start,
        line_end = h.line_end,
        -- why first: a narrow list cuts the breadcrumb, never the reasons
        breadcrumb = reasons(h) .. " · " .. h.breadcrumb,
        label = string.format("%.2f", h.score),
        snippet = h.snippet,
      }
      if matches(item, query) then -- typing narrows the list
        table.insert(out, item)
      end
    end
    return out
  end,
  describe = function(result, items)
    -- the counts and the time first: a narrow status line cuts the section's breadcrumb
    return string.format(
      "%d sections · semantic %s · %.1f ms · related to %s:%d-%d (%s)",
      #items,
      result.semantic,
      result.took_ms or 0,
      result.path,
      result.line_start,
      result.line_end,
      result.breadcrumb
    )
  end,
}

return M
