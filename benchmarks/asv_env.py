"""asv plugin (asv.conf.json "plugins"): environment type ``venv``.

It is asv's ``existing`` environment -- the interpreter named, with hierfair
already installed: nothing built or downloaded, the checkout measured as it
is -- under a stable name.  ``existing`` names results after the
interpreter's path (``existing-py_work_main_.venv_bin_python``), so two
checkouts' results never compare; ``venv`` names them ``venv-py3.11``.
"""

from __future__ import annotations

import sys
from typing import Any

from asv import util
from asv.environment import ExistingEnvironment, get_env_name


class ProjectVenv(ExistingEnvironment):
    """``asv run -E venv:.venv/bin/python``."""

    tool_name = "venv"

    def __init__(self, conf: Any, executable: str, requirements: dict[str, str],
                 tagged_env_vars: dict[Any, str]) -> None:
        # "3.11" (the base class asks too, but keeps the path; and reads the
        # name while it builds)
        python = util.which(sys.executable if executable == "same" else executable)
        self._version = ".".join(util.check_output(
            [python, "-c", "import sys; print(*sys.version_info[:2])"]).split())
        super().__init__(conf, executable, requirements, tagged_env_vars)

    @property
    def name(self) -> str:
        return get_env_name(self.tool_name, self._version, {}, self._tagged_env_vars)
