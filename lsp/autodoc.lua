-- For Neovim 0.11+: `vim.lsp.enable("autodoc")` starts the sidecar for Markdown buffers.
---@type vim.lsp.Config
return {
  cmd = { "autodoc", "serve" },
  filetypes = { "markdown" },
  -- vault markers (nearest wins), else the repository, else the cwd; a root with more Markdown
  -- files than `max_root_files` is asked about first (require("autodoc").setup() sets both)
  root_dir = function(bufnr, on_dir)
    require("autodoc.client").choose_root(bufnr, function(root)
      if root then
        on_dir(root)
      end
    end)
  end,
  init_options = vim.empty_dict(),
  -- the notifications the picker and the status line rely on
  handlers = require("autodoc.client").handlers,
}
