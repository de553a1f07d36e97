---@mod autodoc.picker.actions What the picker's keys do: flip a stage, move through the hits,
--- open one at its span, send them all to the quickfix list, close.

local config = require("autodoc.config")
local layout = require("autodoc.picker.layout")
local render = require("autodoc.picker.render")
local search = require("autodoc.picker.search")
local sources = require("autodoc.sources")
local state = require("autodoc.picker.state")

local M = {}

local jump_ns = vim.api.nvim_create_namespace("autodoc_jump")

--- Flip a stage and search again at once; one retriever that can run always stays checked
--- (the notice says so in the picker's own status line).
---@param stage string
function M.toggle(stage)
  local S = state.current
  if not S or not vim.tbl_contains(sources.toggles, stage) then
    return
  end
  local refused = sources.flip(state.checked, stage, function(s)
    return state.available(S, s)
  end)
  if refused then
    S.notice = refused
    render.stages(S)
    return
  end
  S.notice = nil
  state.save_stages(state.checked)
  render.stages(S)
  search.now()
end

--- Select the hit `delta` away (wrapping around).
---@param delta integer
function M.move(delta)
  local S = state.current
  if not S or #S.hits == 0 then
    return
  end
  S.selected = (S.selected - 1 + delta) % #S.hits + 1
  vim.api.nvim_win_set_cursor(S.wins.list, { S.row_of[S.selected] or S.selected, 0 })
  render.preview(S)
end

function M.close()
  local S = state.current
  if not S then
    return
  end
  state.current = nil
  if S.cancel then
    S.cancel()
  end
  if S.timer then
    S.timer:stop()
    S.timer:close()
  end
  pcall(vim.api.nvim_del_augroup_by_id, S.augroup)
  layout.close(S)
  vim.cmd.stopinsert()
end

--- Open a hit at its line span, the span highlighted for a moment.
---@param root string
---@param hit table
function M.jump(root, hit)
  vim.cmd.edit(vim.fn.fnameescape(vim.fs.joinpath(root, hit.path)))
  local buf = vim.api.nvim_get_current_buf()
  local count = vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_win_set_cursor(0, { math.min(hit.line or hit.line_start, count), 0 })
  vim.cmd("normal! zv")
  vim.api.nvim_buf_clear_namespace(buf, jump_ns, 0, -1)
  for lnum = hit.line_start, math.min(hit.line_end, count) do
    vim.api.nvim_buf_set_extmark(buf, jump_ns, lnum - 1, 0, { line_hl_group = "AutodocSpan" })
  end
  local ms = config.options.span_highlight_ms
  if ms > 0 then
    vim.defer_fn(function()
      if vim.api.nvim_buf_is_valid(buf) then
        vim.api.nvim_buf_clear_namespace(buf, jump_ns, 0, -1)
      end
    end, ms)
  end
end

--- Close the picker and open the selected hit.
function M.open_selected()
  local S = state.current
  if not S then
    return
  end
  local hit = S.hits[S.selected]
  local root = state.files_root(S)
  M.close()
  if hit then
    M.jump(root, hit)
    sources.opened(S.client, S.workspace, S.source, hit)
  end
end

--- A hit as a quickfix item: its whole line span (from its first line, a metadata stub merged
--- above its heading included), its breadcrumb and snippet as the text.
---@param root string
---@param hit autodoc.Item
---@return vim.quickfix.entry
function M.quickfix_item(root, hit)
  local snippet = vim.trim(((hit.snippet or ""):gsub("%s+", " ")))
  return {
    filename = vim.fs.joinpath(root, hit.path),
    lnum = hit.line_start,
    end_lnum = hit.line_end,
    col = 1,
    text = hit.breadcrumb .. (snippet ~= "" and (" — " .. snippet) or ""),
  }
end

--- Close the picker and list every hit in the quickfix list, each with its line span.
function M.to_quickfix()
  local S = state.current
  if not S then
    return
  end
  local root = state.files_root(S)
  local items = {}
  for _, hit in ipairs(S.hits) do
    table.insert(items, M.quickfix_item(root, hit))
  end
  local query = S.query
  M.close()
  vim.fn.setqflist({}, " ", { title = "AutoDoc: " .. query, items = items })
  vim.cmd.copen()
end

return M
