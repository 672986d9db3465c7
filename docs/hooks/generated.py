"""MkDocs hook: the pages that are generated at build time, never kept as copies.

- ``reference/config.md``: every key of an experiment config and of an RL config, from the
  code (``rate.config_docs.reference_markdown``, what ``rate config --markdown`` prints), so
  the reference cannot drift from the defaults and help the code declares;
- ``studies/<name>.md``: each study's page, ``experiments/<name>/README.md``, and
  ``studies/index.md`` from ``experiments/README.md``. A link to a study's page
  (``[x](tilt/README.md)``, or ``[x](../tilt/README.md)`` from a study) becomes a link to its
  page in the site; other links out of experiments/ are not written in these pages.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
# The checkout being documented, not whichever rate the environment has installed.
sys.path.insert(0, str(ROOT / "src"))


def _rl_config() -> type:
    """The tiny world's RL config (its own package, a plugin of rate)."""
    return importlib.import_module("tinyworld.rl_config").RLConfig


def config_reference() -> str:
    from rate.config import Config
    from rate.config_docs import reference_markdown

    parts = [
        "# Config reference\n",
        "Generated from the code when the site is built (`rate config --markdown` prints the "
        "same table; `rate config` the same for a terminal; `rate config --yaml` a complete, "
        "commented config).\n",
        "## Experiment config\n",
        "Every key of the YAML config that the stages read (`--config F.yaml`, any key with "
        "`--set section.key=value`).\n",
        reference_markdown(Config),
    ]
    parts += [
        "\n## RL config of the tiny world\n",
        "The keys of `rate world rl --config F.json` and `--set KEY=VALUE` "
        "(`rate world rl --keys`); paths are relative to `--world`.\n",
        reference_markdown(_rl_config()),
    ]
    return "\n".join(parts)


_STUDY_LINK = re.compile(r"\]\((?:\.\./)?([A-Za-z0-9_]+)/README\.md(#[^)]*)?\)")


def study_page(text: str) -> str:
    return _STUDY_LINK.sub(lambda m: f"]({m.group(1)}.md{m.group(2) or ''})", text)


def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "reference/config.md", content=config_reference()))
    experiments = ROOT / "experiments"
    files.append(
        File.generated(
            config, "studies/index.md", content=study_page((experiments / "README.md").read_text())
        )
    )
    for readme in sorted(experiments.glob("*/README.md")):
        name = readme.parent.name
        files.append(
            File.generated(config, f"studies/{name}.md", content=study_page(readme.read_text()))
        )
    return files
