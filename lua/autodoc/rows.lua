---@mod autodoc.rows One hit as a row of a list that may be too narrow for it, for every picker
--- (the built-in list and the snacks, telescope and fzf-lua adapters): what tells hits apart
--- survives a cut. A row is `label  path:line  breadcrumb`; cut, the file name with its line
--- and the section (the breadcrumb's last part) stay, and the middle goes: first the folders,
--- then the breadcrumb's earlier parts.

local M = {}

M.SEPARATOR = " › " -- between a breadcrumb's parts (the sidecar's)

---@param s string
---@return integer
local function cells(s)
  return vim.fn.strdisplaywidth(s)
end

--- `s` cut to `width` display cells: from the right (`…` at the end) or from the left (`…` at
--- the start).
---@param s string
---@param width integer
---@param from_left? boolean
---@return string
function M.cut(s, width, from_left)
  if cells(s) <= width then
    return s
  end
  if width <= 1 then
    return width == 1 and "…" or ""
  end
  local chars = vim.fn.strchars(s)
  local lo, hi = 0, chars -- the most characters that fit beside the ellipsis
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    local part = from_left and vim.fn.strcharpart(s, chars - mid) or vim.fn.strcharpart(s, 0, mid)
    if cells(part) <= width - 1 then
      lo = mid
    else
      hi = mid - 1
    end
  end
  if from_left then
    return "…" .. vim.fn.strcharpart(s, chars - lo)
  end
  return vim.fn.strcharpart(s, 0, lo) .. "…"
end

--- The location and the breadcrumb fitted to `room` cells together.
---@param dir string the folders, `a/b/` (empty when the row shows only a line)
---@param file string the file name and line, `0009-x.md:23` (or `L23`)
---@param crumb string
---@param room integer
---@return string loc, string crumb
function M.fit_parts(dir, file, crumb, room)
  if cells(dir) + cells(file) + cells(crumb) <= room then
    return dir .. file, crumb
  end
  -- the folders go first, from the left (the ones nearest the file stay longest)
  local dir_room = room - cells(file) - cells(crumb)
  if dir ~= "" and dir_room >= 2 then
    return M.cut(dir, dir_room, true) .. file, crumb
  end
  -- then the breadcrumb's earlier parts, from the right (the title's start stays longest)
  local earlier, section = crumb:match("^(.*)" .. vim.pesc(M.SEPARATOR) .. "(.-)$")
  local loc = dir == "" and file or ("…/" .. file)
  if earlier then
    local earlier_room = room - cells(loc) - cells(M.SEPARATOR) - cells(section)
    if earlier_room >= 1 then
      return loc, M.cut(earlier, earlier_room) .. M.SEPARATOR .. section
    end
  else
    section = crumb
  end
  -- the file name (from the left: its line stays) and the section share what is left
  local loc_room = math.max(room - cells(section), math.floor(room / 2))
  loc = M.cut(dir .. file, loc_room, true)
  return loc, M.cut(section, math.max(room - cells(loc), 0))
end

--- One item as a row that fits `width` cells: "0.93  path:line  breadcrumb", cut as the
--- module says. Returns the row and the spans of its parts: { {from, to, group}, ... } in
--- bytes.
---@param item autodoc.Item
---@param width integer
---@param grouped? boolean the file is the header above: show only the line number
---@return string, table[]
function M.fit(item, width, grouped)
  local label = item.label -- a relevance or a facet dot, a match kind, a related score
  local lead = grouped and ("  " .. label .. "  ") or (label .. "  ")
  local line = item.line or item.line_start
  local dir, file = "", "L" .. line
  if not grouped then
    dir, file = item.path:match("^(.*/)([^/]*)$")
    dir, file = dir or "", (file or item.path) .. ":" .. line
  end
  local loc, crumb = M.fit_parts(dir, file, item.breadcrumb or "", width - cells(lead) - 2)
  local row = lead .. loc .. "  " .. crumb
  local label_from = grouped and 2 or 0
  return row,
    {
      { label_from, label_from + #label, "AutodocRelevance" },
      { #lead, #lead + #loc, "AutodocPath" },
      { #lead + #loc + 2, #row, "AutodocBreadcrumb" },
    }
end

return M
