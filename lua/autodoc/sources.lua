---@mod autodoc.sources What a picker can list besides a search: names (`search.find`) and
--- related sections (`related`). One request and one conversion each, so the built-in picker
--- and the adapters for other pickers show the same items.

local M = {}

---@class autodoc.Item
---@field path string root-relative
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
        line_start = h.line_start,
        line_end = h.line_end,
        breadcrumb = h.breadcrumb .. "  (" .. reasons(h) .. ")",
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
    return string.format(
      "related to %s:%d-%d (%s) · %d sections · semantic %s · %.1f ms",
      result.path,
      result.line_start,
      result.line_end,
      result.breadcrumb,
      #items,
      result.semantic,
      result.took_ms or 0
    )
  end,
}

return M
