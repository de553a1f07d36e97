-- AutoDoc: commands and <Plug> mappings only; everything else loads on first use.
if vim.g.loaded_autodoc then
  return
end
vim.g.loaded_autodoc = true

vim.api.nvim_create_user_command("AutodocSearch", function(cmd)
  require("autodoc").search({ query = cmd.args ~= "" and cmd.args or nil })
end, { nargs = "?", desc = "AutoDoc: search the knowledge base" })

vim.api.nvim_create_user_command("AutodocRelated", function(cmd)
  require("autodoc").related({ whole = cmd.bang })
end, { bang = true, desc = "AutoDoc: sections related to this one (!: to this note)" })

vim.api.nvim_create_user_command("AutodocFind", function(cmd)
  require("autodoc").find({ query = cmd.args ~= "" and cmd.args or nil })
end, { nargs = "?", desc = "AutoDoc: a title, alias, heading or identifier by name" })

vim.api.nvim_create_user_command("Autodoc", function(cmd)
  local autodoc = require("autodoc")
  local sub = cmd.fargs[1]
  if not vim.tbl_contains(autodoc.subcommands, sub) then
    vim.notify("autodoc: :Autodoc " .. table.concat(autodoc.subcommands, "|"), vim.log.levels.ERROR)
    return
  end
  autodoc[sub]({ range = cmd.range > 0, args = table.concat(vim.list_slice(cmd.fargs, 2), " ") })
end, {
  nargs = "+",
  range = true,
  desc = "AutoDoc: status, reindex, open, workspace, rename [name]",
  complete = function(lead, line)
    if line:match("^%S+%s+%S+%s") then
      return {}
    end
    return vim.tbl_filter(function(s)
      return s:find(lead, 1, true) == 1
    end, { "status", "reindex", "open", "workspace", "rename" })
  end,
})

vim.keymap.set("n", "<Plug>(autodoc-search)", function()
  require("autodoc").search()
end, { desc = "AutoDoc: search" })
vim.keymap.set({ "n", "x" }, "<Plug>(autodoc-open)", function()
  require("autodoc").open()
end, { desc = "AutoDoc: search the word under the cursor or the selection" })
vim.keymap.set("n", "<Plug>(autodoc-related)", function()
  require("autodoc").related()
end, { desc = "AutoDoc: sections related to the one under the cursor" })
vim.keymap.set("n", "<Plug>(autodoc-find)", function()
  require("autodoc").find()
end, { desc = "AutoDoc: find by name" })

-- The commands the sidecar's code actions and lenses name run here (a register, the quickfix
-- list, a new note written), and a buffer it attaches to shows its lenses.
vim.lsp.commands["autodoc.copyLink"] = function(command)
  require("autodoc.editing").copy_link(command)
end
vim.lsp.commands["autodoc.backlinks"] = function(command, ctx)
  require("autodoc.editing").backlinks(command, ctx)
end
vim.lsp.commands["autodoc.writeCreated"] = function(command)
  require("autodoc.new_notes").write_created(command)
end
vim.api.nvim_create_autocmd("LspAttach", {
  group = vim.api.nvim_create_augroup("autodoc_attach", { clear = true }),
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if client and client.name == "autodoc" then
      require("autodoc.new_notes").follow(client)
      require("autodoc.editing").attach(ev.buf)
    end
  end,
})
