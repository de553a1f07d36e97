---@mod autodoc.notice What AutoDoc tells you as it works (indexing began and ended, a link
--- copied), said so that it never stops the editor with "Press ENTER": one line, cut to the
--- room the message line has. A `vim.notify` another plugin replaced (nvim-notify,
--- snacks.notifier, noice) shows it as that plugin shows notices.

local M = {}

--- Whether `vim.notify` is Neovim's own, which echoes into the message line.
---@return boolean
local function echoes()
  local info = debug.getinfo(vim.notify, "S")
  return info ~= nil and info.source == "@vim/_editor.lua"
end

--- Say `text` (prefixed `autodoc: `) on one line; the built-in message line gets at most
--- `v:echospace` cells of it, so no hit-enter prompt follows whatever 'columns' and 'cmdheight'.
---@param text string
---@param level? integer a `vim.log.levels` value (default INFO)
function M.show(text, level)
  local line = vim.trim((("autodoc: " .. text):gsub("%s+", " ")))
  level = level or vim.log.levels.INFO
  if not echoes() then
    vim.notify(line, level)
    return
  end
  local group = level >= vim.log.levels.ERROR and "ErrorMsg"
    or level == vim.log.levels.WARN and "WarningMsg"
    or nil
  local fitted = require("autodoc.rows").cut(line, math.max(vim.v.echospace, 1))
  vim.api.nvim_echo({ { fitted, group } }, true, {})
end

return M
