---@mod autodoc.health `:checkhealth autodoc`

local M = {}

--- How to install the sidecar from this plugin's own checkout (it holds the Python package).
--- The distribution is `autodoc-search`: `autodoc` on PyPI is an unrelated package.
---@return string[]
function M.install_advice()
  local source = debug.getinfo(1, "S").source:sub(2)
  local checkout = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(source)))
  local quoted = vim.fn.shellescape(checkout)
  return {
    "pipx install --force " .. quoted .. "   (or: uv tool install " .. quoted .. ")",
    "or into a virtualenv of yours: pip install "
      .. quoted
      .. "   (distribution autodoc-search;"
      .. " the PyPI project named autodoc is unrelated)",
    "or point setup({ cmd = { '/path/to/autodoc', 'serve' } }) at an installed one",
  }
end

local function age(seconds)
  if not seconds or seconds == vim.NIL then
    return "never"
  end
  local d = math.floor(os.time() - seconds)
  if d < 120 then
    return d .. " s ago"
  elseif d < 7200 then
    return math.floor(d / 60) .. " min ago"
  end
  return math.floor(d / 3600) .. " h ago"
end

local function neovim()
  vim.health.start("Neovim")
  if vim.fn.has("nvim-0.10") == 1 then
    vim.health.ok("Neovim " .. tostring(vim.version()))
  else
    vim.health.error("Neovim 0.10 or newer is required")
  end
end

local function configuration()
  local config = require("autodoc.config")
  vim.health.start("Configuration")
  if #config.unknown == 0 then
    vim.health.ok("setup() options are valid")
  else
    vim.health.warn("unknown setup() keys: " .. table.concat(config.unknown, ", "))
  end
end

--- The sidecar command runs: its `--version`.
local function sidecar()
  local health = vim.health
  local cmd = require("autodoc.config").options.cmd
  health.start("Sidecar")
  if vim.fn.executable(cmd[1]) ~= 1 then
    health.error(cmd[1] .. " not found on PATH", M.install_advice())
    return
  end
  local version_cmd = vim.deepcopy(cmd)
  if version_cmd[#version_cmd] == "serve" then
    version_cmd[#version_cmd] = "--version"
  else
    table.insert(version_cmd, "--version")
  end
  local ok, out = pcall(function()
    return vim.system(version_cmd, { text = true }):wait(10000)
  end)
  if ok and out.code == 0 then
    health.ok(vim.trim(out.stdout) .. " (" .. table.concat(cmd, " ") .. ")")
  else
    health.error("`" .. table.concat(version_cmd, " ") .. "` failed", M.install_advice())
  end
end

--- What leaves files out of a served workspace, as its last walk found it: the `exclude` and
--- `include` options, the `.gitignore` / `.ignore` files in force, what each rule left out.
---@param rules autodoc.FileRules?
local function file_rules(rules)
  local health = vim.health
  if not rules then
    return
  end
  local function listed(patterns)
    return #patterns > 0 and table.concat(patterns, "  ") or "none"
  end
  health.info(
    "left out: exclude " .. listed(rules.exclude) .. "; include " .. listed(rules.include)
  )
  if rules.respect_gitignore then
    health.info(".gitignore/.ignore honoured: " .. listed(rules.ignore_files))
  else
    health.info(".gitignore/.ignore not read (respect_gitignore = false)")
  end
  for _, row in ipairs(rules.left_out) do
    health.info(
      string.format(
        "rule %s (%s) left out %d files, %d folders",
        row.rule,
        row.source,
        row.files,
        row.folders
      )
    )
  end
end

--- One workspace a sidecar serves: its size and age, embedding and ranker, the files left out.
---@param ws table an `autodoc.WorkspaceState`
local function workspace(ws)
  local health = vim.health
  if not ws.served then
    health.info(ws.name .. ": in the store, not served by this sidecar (" .. ws.root .. ")")
    return
  end
  health.ok(
    string.format(
      "%s: %d documents, %d chunks, indexed %s",
      ws.name,
      ws.documents,
      ws.chunks,
      age(ws.indexed_at)
    )
  )
  local semantic = "embedding: " .. (ws.semantic or "off")
  if ws.model and ws.model ~= "" then
    semantic = semantic .. " (" .. ws.model .. ")"
  elseif ws.semantic_reason and ws.semantic_reason ~= "" then
    semantic = semantic .. " (" .. ws.semantic_reason .. ")"
  end
  if ws.semantic == "ready" or ws.semantic == "partial" then
    health.ok(semantic)
  else
    health.warn(semantic)
  end
  local rank = ws.rank or {}
  if rank.state and rank.state ~= "off" then
    health.ok("ranker: " .. rank.state .. " (" .. (rank.model or "") .. ")")
  else
    health.info("ranker: off (" .. (rank.error or "") .. ")")
  end
  file_rules(ws.rules)
end

--- The buffer's root, and each running sidecar: its lease, then its workspaces.
local function clients()
  local health = vim.health
  local client_mod = require("autodoc.client")
  health.start("Client")
  local root, how = client_mod.root()
  local found_by = ({
    vault = "a vault marker",
    repository = "a repository marker (no vault marker above the buffer)",
    cwd = "no marker: the current directory",
    folder = "your choice: the note's folder of a large root",
  })[how]
  health.info("the buffer's root: " .. root .. ", found by " .. found_by)
  local running = vim.lsp.get_clients({ name = "autodoc" })
  if #running == 0 then
    health.info("no sidecar running; :AutodocSearch starts one for " .. root)
    return
  end
  for _, client in ipairs(running) do
    health.ok("running for " .. client.root_dir .. " (client " .. client.id .. ")")
    local status, err = client_mod.request_sync(client, "workspace/executeCommand", {
      command = "autodoc.status",
      arguments = {},
    })
    if err then
      health.error("status failed: " .. (err.message or "?"))
    else
      if status.server.writer then
        health.ok("writer lease held; store " .. status.server.db)
      else
        health.warn("read-only: the writer lease is held by " .. status.server.holder)
      end
      if status.server.question_log ~= vim.NIL and status.server.question_log then
        health.info("questions logged to " .. status.server.question_log .. " (doc/gaps.md)")
      else
        health.info("questions not logged (autodoc serve --log-questions PATH turns it on)")
      end
      health.start("Workspaces")
      for _, ws in ipairs(status.workspaces) do
        workspace(ws)
      end
    end
  end
end

function M.check()
  neovim()
  configuration()
  sidecar()
  clients()
end

return M
