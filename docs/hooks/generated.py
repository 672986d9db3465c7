"""MkDocs hook: the pages that are generated at build time, never kept as copies.

- ``reference/config.md``: every key of an experiment config and of an RL config, from the
  code (``rate.config_docs.reference_markdown``, what ``rate config --markdown`` prints), so
  the reference cannot drift from the defaults and help the code declares;
- ``studies/<name>.md``: each study's page, ``experiments/<name>/README.md``, and
  ``studies/index.md`` from ``experiments/README.md``. A link to a study's page
  (``[x](tilt/README.md)``, or ``[x](../tilt/README.md)`` from a study) becomes a link to its
  page in the site; other links out of experiments/ are not written in these pages. An
  image a study's page shows from its own folder (``![x](offline/vader.png)``) is published
  beside the page, as ``studies/<name>/<path>``, and the link made to point there.
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


# An image of the study's own folder: a relative path without "..", ending in an image type.
_IMAGE = re.compile(r"(!\[[^\]]*\]\()((?![a-z]+:|/)(?:(?!\.\./)[^)\s])+\.(?:png|svg|jpg))\)")


def study_page(text: str, name: str | None = None) -> str:
    """A study's README as a page of the site (``name``: the study, whose images move)."""
    text = _STUDY_LINK.sub(lambda m: f"]({m.group(1)}.md{m.group(2) or ''})", text)
    if name is not None:
        text = _IMAGE.sub(lambda m: f"{m.group(1)}{name}/{m.group(2)})", text)
    return text


def study_images(readme: Path) -> list[str]:
    """The paths, relative to the study's folder, of the images its README shows."""
    return sorted({m.group(2) for m in _IMAGE.finditer(readme.read_text())})


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
        page = study_page(readme.read_text(), name)
        files.append(File.generated(config, f"studies/{name}.md", content=page))
        for image in study_images(readme):
            path = readme.parent / image
            if path.is_file():  # else the page's link is reported as broken by the build
                files.append(
                    File.generated(config, f"studies/{name}/{image}", abs_src_path=str(path))
                )
    return files
