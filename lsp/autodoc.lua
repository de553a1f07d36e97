-- For Neovim 0.11+: `vim.lsp.enable("autodoc")` starts the sidecar for Markdown buffers.
---@type vim.lsp.Config
return {
  cmd = { "autodoc", "serve" },
  filetypes = { "markdown" },
  root_markers = { ".autodoc", ".git" },
  init_options = vim.empty_dict(),
  -- the notifications the picker and the status line rely on
  handlers = require("autodoc.client").handlers,
}
