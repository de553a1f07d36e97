---@mod autodoc.picker.layout The picker's four floating windows: where they go, opening,
--- following the editor's size, closing.
---
--- The query field over the hit list on the left, the preview on the right, the stage
--- checkboxes and status across the bottom (`picker.width`, `picker.height`, `list_width`); in
--- an editor too narrow for a readable list beside the preview, the list above the preview.

local config = require("autodoc.config")

local M = {}

local function scratch()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  return buf
end

--- A new picker's buffers, one per window (wiped when it closes).
---@return table<string, integer>
function M.buffers()
  return { prompt = scratch(), list = scratch(), preview = scratch(), stages = scratch() }
end

M.NO_PREVIEW = " Preview " -- the preview's title while no hit is selected

--- A list narrower than this (cells) goes above the preview instead of beside it: its rows
--- keep a file name and a section whole.
M.MIN_LIST_WIDTH = 48

--- The windows stacked, each the picker's whole width: the query field, the list, the
--- preview, the stage line.
---@return table<string, { row: integer, col: integer, width: integer, height: integer }>
local function stacked(row, col, width, height)
  local list = math.max(1, math.floor((height - 9) / 2))
  local preview = math.max(1, height - 9 - list)
  return {
    prompt = { row = row, col = col, width = width, height = 1 },
    list = { row = row + 3, col = col, width = width, height = list },
    preview = { row = row + list + 5, col = col, width = width, height = preview },
    stages = { row = row + height - 2, col = col, width = width, height = 1 },
  }
end

--- Each window's place for the editor's size now: the list beside the preview, or above it
--- where beside it would be narrower than `MIN_LIST_WIDTH`.
---@return table<string, { row: integer, col: integer, width: integer, height: integer }>
function M.geometry()
  local cols, lines = vim.o.columns, vim.o.lines
  local width = math.max(40, math.floor(cols * config.options.picker.width))
  local height = math.max(10, math.floor(lines * config.options.picker.height))
  local row = math.floor((lines - height) / 2)
  local col = math.floor((cols - width) / 2)
  local left = math.floor(width * config.options.picker.list_width)
  if left < M.MIN_LIST_WIDTH then
    return stacked(row, col, width, height)
  end
  return {
    prompt = { row = row, col = col, width = left, height = 1 },
    list = { row = row + 3, col = col, width = left, height = height - 7 },
    preview = { row = row, col = col + left + 2, width = width - left - 2, height = height - 4 },
    stages = { row = row + height - 2, col = col, width = width, height = 1 },
  }
end

--- Open the windows over `S.bufs`, the query field last and entered (in insert mode, holding
--- `S.query`), titled `title`.
---@param S autodoc.PickerState
---@param title string
function M.open(S, title)
  local geo = M.geometry()
  local function float(name, enter, extra)
    local g = geo[name]
    local cfg = vim.tbl_extend("force", {
      relative = "editor",
      row = g.row,
      col = g.col,
      width = g.width,
      height = g.height,
      style = "minimal",
      border = "rounded",
      zindex = 60,
    }, extra or {})
    S.wins[name] = vim.api.nvim_open_win(S.bufs[name], enter, cfg)
  end
  float("list", false)
  float("preview", false, { title = M.NO_PREVIEW, title_pos = "center" })
  float("stages", false)
  float("prompt", true, { title = title, title_pos = "left" })
  vim.wo[S.wins.list].cursorline = true
  vim.wo[S.wins.list].winhighlight = "CursorLine:AutodocSelected"
  vim.wo[S.wins.list].wrap = false
  vim.wo[S.wins.preview].wrap = false
  vim.wo[S.wins.preview].number = true
  vim.bo[S.bufs.preview].filetype = "markdown"
  vim.api.nvim_buf_set_lines(S.bufs.prompt, 0, -1, false, { S.query })
  vim.cmd.startinsert({ bang = true })
end

--- Place the windows where the editor's size puts them now.
---@param S autodoc.PickerState
function M.place(S)
  local geo = M.geometry()
  for name, win in pairs(S.wins) do
    local g = geo[name]
    if g and vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_set_config(win, {
        relative = "editor",
        row = g.row,
        col = g.col,
        width = g.width,
        height = g.height,
      })
    end
  end
end

---@param S autodoc.PickerState
function M.close(S)
  for _, win in pairs(S.wins) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
end

return M
