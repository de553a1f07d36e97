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

---@param uri string
---@return string the file, its real path, without a `#L12` fragment
local function file_of(uri)
  local fname = vim.uri_to_fname((uri:gsub("#.*$", "")))
  return vim.uv.fs_realpath(fname) or fname
end

--- Whether a document link leads to the target: its file, and for a heading its line (a
--- link to a heading leads to `file#L<line>`); for a title (`heading_line` nil), any link
--- to the file.
---@param link lsp.DocumentLink
---@param file string
---@param heading_line integer? 1-based
---@return boolean
local function leads_to(link, file, heading_line)
  if type(link.target) ~= "string" or file_of(link.target) ~= file then
    return false
  end
  return heading_line == nil or link.target:match("#L(%d+)$") == tostring(heading_line)
end

--- Each location at its link's column: the sidecar names a linking place by its line, so the
--- linking file's own links (`textDocument/documentLink`, in the client's units) that lead to
--- the target give the column, the first such link on the line for the first place on it.
--- A location that has a column already keeps it. `done()` once every file answered.
---@param client vim.lsp.Client
---@param locations lsp.Location[]
---@param file string the target's real path
---@param heading_line integer? the target heading's line (1-based); nil for the title
---@param done fun()
local function place_at_links(client, locations, file, heading_line, done)
  local by_uri, pending = {}, 0
  for _, loc in ipairs(locations) do
    if loc.range.start.character == 0 then
      by_uri[loc.uri] = by_uri[loc.uri] or {}
      table.insert(by_uri[loc.uri], loc)
    end
  end
  local function answered()
    pending = pending - 1
    if pending == 0 then
      done()
    end
  end
  for uri, here in pairs(by_uri) do
    pending = pending + 1
    client:request("textDocument/documentLink", { textDocument = { uri = uri } }, function(_, links)
      local used = {}
      for _, loc in ipairs(here) do
        for i, link in ipairs(links or {}) do
          if
            not used[i]
            and link.range.start.line == loc.range.start.line
            and leads_to(link, file, heading_line)
          then
            used[i], loc.range = true, link.range
            break
          end
        end
      end
      answered()
    end)
  end
  if pending == 0 then
    done()
  end
end

--- The 1-based line of the heading (level 2 and below) on `line` (0-based) of the buffer, or
--- nil on the title, where backlinks are those to the whole note (as the sidecar decides).
---@param bufnr integer
---@param line integer
---@return integer?
local function heading_at(bufnr, line)
  local text = vim.api.nvim_buf_get_lines(bufnr, line, line + 1, false)[1] or ""
  local hashes = text:match("^(#+)%s")
  return hashes and #hashes > 1 and line + 1 or nil
end

--- `autodoc.backlinks(uri, line, character)`: the places that link to the heading (or, on the
--- title, to the note) in the quickfix list, each at its link's line and column, as
--- `vim.lsp.buf.references()` lists them.
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
    place_at_links(client, result, file_of(args[1]), heading_at(ctx.bufnr, args[2]), function()
      local items = vim.lsp.util.locations_to_items(result, client.offset_encoding)
      vim.fn.setqflist({}, " ", { title = "Backlinks", items = items })
      vim.cmd("botright copen")
    end)
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
