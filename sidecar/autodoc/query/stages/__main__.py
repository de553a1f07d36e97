"""`python -m autodoc.query.stages lua > lua/autodoc/stages.lua`: the plugin's stage list."""

import sys

from autodoc.query.stages import lua_stage_list

if sys.argv[1:] == ["lua"]:
    sys.stdout.write(lua_stage_list())
else:
    sys.exit("usage: python -m autodoc.query.stages lua")
