"""The score cache: every score a scorer computed in a project, by text, so that no text is
scored twice by the same scorer (a profile's originals are scored once, not once per attribute).

One folder per scorer identity, ``PROJECT_DIR/data/scored/.score_cache/<backend>-<digest>/``
(hidden, like scoring's other work files: it is no stage's output, and a folder's digest passes
it over). The digest covers everything that determines a score (:func:`scorer_identity`), so a
changed option, model folder or scorer code gets a new folder and never an old score. Each
writer (one process) appends to its own shard, ``<host>-<pid>-<token>.tsv``, one line per text:
``<key>\\t<score>\\n``, the key being :func:`text_key` and the score Python's ``repr`` of the
float (which reads back to the same float). Lines are appended and fsynced as chunks finish, so
a killed run's scores are kept. No locks (``flock`` and sqlite are not safe on NFS): no file has
two writers, and a reader takes the union of every shard, counting only whole lines (a kill in
the middle of an append leaves a last line without its newline, which is skipped, as is any line
that does not read as a key and a finite number).

Two shards may hold the same text, where two runs scored it at once. Their scores agree where
the scorer is deterministic; a batched model's scores may differ in the last bits with the
batch a text was padded in (bfloat16 on a GPU: a few units of its last place), so scores that
agree within :data:`AGREE` count as the same and the first shard's (by name) is used; scores
further apart mean the scorer is not what its identity says (a hub model changed under an
unpinned revision) or a shard is damaged, and are an error. Deleting the cache is always safe:
the texts are scored again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import os
import re
import secrets
import socket
from collections.abc import Iterable
from pathlib import Path

from rate.errors import DataFileError
from rate.fs import apply_group_permissions, ensure_dir, write_error
from rate.io import _read_error, atomic_write_json
from rate.provenance import MadeFrom, content_digest, made_from
from rate.score.backends import SCORERS
from rate.score.base import Scorer
from rate.templates import ScoringTemplate

log = logging.getLogger(__name__)

FORMAT = 1  # part of every identity: a new line format gets new folders
SHARD_SUFFIX = ".tsv"
IDENTITY_FILE = "scorer.json"  # what the folder's scores are of, for a person reading it
# Scores of one text that count as the same: batch-dependent rounding (bfloat16's last place on
# a logit of a few units is ~0.016) stays within it; another model or a damaged line does not.
AGREE = {"rel_tol": 1e-2, "abs_tol": 1e-2}
_LINE = re.compile(rb"([0-9a-f]{64})\t([-+0-9.eE]{1,40})")


def text_key(prompt: str, text: str) -> str:
    """The sha256 of the prompt as scored and the text (the prompt's length first, so no two
    pairs share their bytes)."""
    p = prompt.encode("utf-8", "surrogatepass")
    t = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(b"%d\0" % len(p) + p + b"\0" + t).hexdigest()


def scorer_identity(template: ScoringTemplate, scorer: Scorer) -> MadeFrom:
    """What determines a score: the backend's options and the built scorer's description (its
    resolved device and dtype), the content of the files its options name (a local model
    folder; :meth:`rate.registry.Part.inputs`) and the code of its backend (with the numerical
    packages' versions). A template's name, reward key and batch size are left out: they do
    not change a score, and templates that differ only there share a cache."""
    module = SCORERS[template.backend].factory.partition(":")[0]
    spec = template.spec
    settings = {
        "format": FORMAT,
        "backend": template.backend,
        "options": dataclasses.asdict(spec) if dataclasses.is_dataclass(spec) else spec,
        "scorer": scorer.describe(),
    }
    files = {name: Path(path) for name, path in spec.inputs().items()}
    return made_from(code=module, settings=settings, **files)


def cache_folder(root: Path, template: ScoringTemplate, identity: MadeFrom) -> Path:
    """The folder of one scorer identity under ``root`` (the project's score cache)."""
    backend = re.sub(r"[^A-Za-z0-9_]", "_", template.backend)
    return root / f"{backend}-{content_digest(identity)[:20]}"


class ScoreCache:
    """The scores of one scorer identity: read from every shard of ``folder``, appended to this
    process's own shard."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.scores: dict[str, float] = {}
        self.path: Path | None = None  # this writer's shard, made at its first write
        self._fd: int | None = None

    @classmethod
    def open(
        cls, root: Path, template: ScoringTemplate, scorer: Scorer, wanted: set[str] | None = None
    ) -> ScoreCache:
        """The cache of ``scorer`` (built from ``template``) under ``root``, loaded (only the
        keys in ``wanted``, where given, to keep memory to what a run needs)."""
        identity = scorer_identity(template, scorer)
        folder = ensure_dir(cache_folder(root, template, identity))
        record = folder / IDENTITY_FILE
        if not record.is_file():  # runs racing here write the same record, atomically
            atomic_write_json(
                record,
                {
                    "made_from": identity,
                    "backend": template.backend,
                    "first_template": template.name,
                    "scorer": scorer.describe(),
                },
            )
        return cls(folder).load(wanted)

    def shards(self) -> list[Path]:
        return sorted(self.folder.glob(f"*{SHARD_SUFFIX}"))

    def load(self, wanted: set[str] | None = None) -> ScoreCache:
        """(Re)read the union of every shard; -> self."""
        self.scores = {}
        skipped = near = 0
        worst = 0.0
        for shard in self.shards():
            for key, value in _read_shard(shard, wanted):
                if value is None:
                    skipped += 1
                    continue
                before = self.scores.setdefault(key, value)
                if before == value:
                    continue
                if not math.isclose(before, value, **AGREE):
                    raise self._conflict(key, before, value, shard)
                near += 1
                worst = max(worst, abs(before - value))
        if skipped:
            log.info(
                "score cache %s: skipped %d incomplete or unreadable line(s) (a killed run's "
                "last append); their texts are scored again",
                self.folder,
                skipped,
            )
        if near:
            log.info(
                "score cache %s: %d text(s) have scores from two runs that differ by up to %.3g "
                "(batch-dependent rounding); the first shard's are used",
                self.folder,
                near,
                worst,
            )
        return self

    def _conflict(self, key: str, before: float, value: float, shard: Path) -> DataFileError:
        first = next(
            (s for s in self.shards() if any(k == key for k, _ in _read_shard(s, {key}))), None
        )
        return DataFileError(
            f"{self.folder}: the shards {first.name if first else '?'} and {shard.name} hold "
            f"different scores of one text ({before!r} and {value!r}): the scorer gave "
            "different scores to the same text (a model changed under the same name: pin its "
            "revision or use a local folder) or a shard is damaged; delete the folder (always "
            "safe: its texts are scored again) and rerun, or set scoring.cache: false"
        )

    def lookup(self, keys: list[str]) -> list[float | None]:
        """The cached score of each key, None where there is none."""
        return [self.scores.get(k) for k in keys]

    def add(self, keys: Iterable[str], values: Iterable[float]) -> None:
        """Keep the scores of keys not cached yet: appended to this process's shard and
        fsynced before returning."""
        fresh: dict[str, float] = {}
        for key, value in zip(keys, values, strict=True):
            if key not in self.scores and key not in fresh:
                fresh[key] = float(value)
        if not fresh:
            return
        payload = "".join(f"{k}\t{v!r}\n" for k, v in fresh.items()).encode()
        path = self._shard()
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as err:
            raise write_error(path, err) from None
        self.scores.update(fresh)

    def _shard(self) -> Path:
        """This process's shard, made (exclusively: no two writers share one) at first use."""
        if self._fd is None:
            host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "host"
            name = f"{host}-{os.getpid()}-{secrets.token_hex(4)}{SHARD_SUFFIX}"
            path = ensure_dir(self.folder) / name  # the folder may have been deleted since
            try:
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666)
            except OSError as err:
                raise write_error(path, err) from None
            self.path = path
            apply_group_permissions(path)
        return self.path

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def _read_shard(path: Path, wanted: set[str] | None) -> Iterable[tuple[str, float | None]]:
    """(key, score) of each whole line of one shard (score None: a line that does not read);
    keys outside ``wanted`` (where given) are passed over."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:  # deleted while we listed the folder: its texts are scored again
        return
    except OSError as err:
        raise _read_error(path, err) from None
    lines = data.split(b"\n")
    if lines[-1]:  # no newline after it: a kill in the middle of an append
        yield "", None
    for line in lines[:-1]:
        m = _LINE.fullmatch(line)
        if m is None:
            yield "", None
            continue
        key = m.group(1).decode()
        if wanted is not None and key not in wanted:
            continue
        try:
            value = float(m.group(2))
        except ValueError:
            value = math.nan
        yield key, value if math.isfinite(value) else None
