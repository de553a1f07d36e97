-- `:Telescope autodoc search|related|find` after `require("telescope").load_extension("autodoc")`.
local pickers = require("autodoc.pickers.telescope")

return require("telescope").register_extension({
  exports = {
    autodoc = pickers.search,
    search = pickers.search,
    related = pickers.related,
    find = pickers.find,
  },
})
