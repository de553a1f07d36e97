---@mod autodoc.new_notes The note a code action creates ("Create note 'X'") is written to disk
--- at once, not left unsaved in a hidden buffer.
---
--- The sidecar's action is a workspace edit: create the file, then fill it. Neovim applies
--- both, and the filled buffer stays modified and unlisted. So for the sidecar's client, each
--- action whose edit creates files gains a command, `autodoc.writeCreated` with the files'
--- URIs, which Neovim runs right after applying the edit, here.

local M = {}

M.WRITE_CREATED = "autodoc.writeCreated"

--- The URIs an action's workspace edit creates.
---@param action table a code action (or a command)
---@return string[]
local function created_by(action)
  local uris = {}
  local edit = type(action) == "table" and action.edit
  for _, change in ipairs(edit and edit.documentChanges or {}) do
    if change.kind == "create" then
      table.insert(uris, change.uri)
    end
  end
  return uris
end

--- Give each action that creates files, and runs no command of its own, the command that
--- writes them.
---@param actions table[]? a `textDocument/codeAction` answer
---@return table[]?
function M.with_writes(actions)
  for _, action in ipairs(type(actions) == "table" and actions or {}) do
    local uris = created_by(action)
    if #uris > 0 and action.command == nil then
      action.command = { title = "Write the new note", command = M.WRITE_CREATED, arguments = uris }
    end
  end
  return actions
end

--- `autodoc.writeCreated(uri, ...)`: write each created note's buffer (its save re-indexes it)
--- and say so.
---@param command lsp.Command
function M.write_created(command)
  for _, uri in ipairs(command.arguments or {}) do
    local bufnr = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].modified then
      vim.api.nvim_buf_call(bufnr, function()
        vim.cmd("silent keepalt write")
      end)
      require("autodoc.notice").show(
        "created " .. vim.fn.fnamemodify(vim.uri_to_fname(uri), ":~:.")
      )
    end
  end
end

--- Have the client's code actions write the notes they create (once per client).
---@param client vim.lsp.Client
function M.follow(client)
  if client.autodoc_writes_created then
    return
  end
  client.autodoc_writes_created = true
  local request = client.request
  ---@diagnostic disable-next-line: duplicate-set-field
  client.request = function(self, method, params, handler, bufnr)
    if method == "textDocument/codeAction" and handler then
      local answer = handler
      handler = function(err, result, ...)
        return answer(err, M.with_writes(result), ...)
      end
    end
    return request(self, method, params, handler, bufnr)
  end
end

return M
