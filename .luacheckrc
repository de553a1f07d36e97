-- luacheck over the Neovim plugin (`luacheck lua plugin lsp`; tests/test_lua_lint.py runs it).
-- Neovim runs LuaJIT; `vim` is its one global, read-only but for the option and variable
-- accessors a plugin writes through.
std = "luajit"
max_code_line_length = 100 -- StyLua's column_width (.stylua.toml)
read_globals = {
  vim = {
    other_fields = true,
    fields = {
      bo = { read_only = false, other_fields = true },
      wo = { read_only = false, other_fields = true },
      g = { read_only = false, other_fields = true },
      -- client-side handlers of the commands a server's code actions and lenses name
      lsp = { fields = { commands = { read_only = false, other_fields = true } }, other_fields = true },
    },
  },
}

-- snacks.nvim's picker is reached through the global it defines.
files["lua/autodoc/pickers/snacks.lua"] = { read_globals = { "Snacks" } }

-- Generated from the sidecar's protocol.py: each field's description is one comment line.
files["lua/autodoc/types.lua"] = { max_comment_line_length = false }
