---@mod autodoc.editing The writing features' client side: the commands the sidecar's code
--- actions and code lenses name (run here, not sent back), and code lenses kept fresh.

local M = {}

M.COPY_LINK = "autodoc.copyLink"
M.BACKLINKS = "autodoc.backlinks"

--- `autodoc.copyLink(link)`: the link in the unnamed register, and the clipboard's where
--- Neovim has one.
---@param command lsp.Command
function M.copy_link(command)
  local link = (command.arguments or {})[1]
  if type(link) ~= "string" then
    return
  end
  vim.fn.setreg('"', link)
  if vim.fn.has("clipboard") == 1 then
    pcall(vim.fn.setreg, "+", link)
  end
  require("autodoc.notice").show("copied " .. link)
end

--- `autodoc.backlinks(uri, line, character)`: the places that link to the heading (or, on the
--- title, to the note) in the quickfix list, each at its link's line and column (the sidecar's
--- references carry the link's range), as `vim.lsp.buf.references()` lists them.
---@param command lsp.Command
---@param ctx { client_id: integer, bufnr: integer }
function M.backlinks(command, ctx)
  local args = command.arguments or {}
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client or type(args[1]) ~= "string" then
    return
  end
  local params = {
    textDocument = { uri = args[1] },
    position = { line = args[2], character = args[3] },
    context = { includeDeclaration = false },
  }
  client:request("textDocument/references", params, function(err, result)
    if err or not result or #result == 0 then
      require("autodoc.notice").show("no backlinks")
      return
    end
    local items = vim.lsp.util.locations_to_items(result, client.offset_encoding)
    vim.fn.setqflist({}, " ", { title = "Backlinks", items = items })
    vim.cmd("botright copen")
  end, ctx.bufnr)
end

--- Lenses for a buffer the sidecar attached to, asked again when the text settles; the
--- sidecar's `workspace/codeLens/refresh` asks again once a save is indexed.
---@param bufnr integer
function M.attach(bufnr)
  if not require("autodoc.config").options.code_lens then
    return
  end
  local group = vim.api.nvim_create_augroup("autodoc_lens_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      vim.lsp.codelens.refresh({ bufnr = bufnr })
    end,
  })
  vim.lsp.codelens.refresh({ bufnr = bufnr })
end

return M
