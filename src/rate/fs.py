"""Group permissions, folder making, folder fsyncs and the one-line error of a failed write."""

from __future__ import annotations

import contextlib
import errno
import grp
import hashlib
import os
import stat
from pathlib import Path

from rate.errors import RateError, WriteError

PathLike = str | os.PathLike[str]


def _umask() -> int:
    """Return the process umask without changing it where /proc allows (os.umask is racy)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_group_permissions(path: PathLike) -> None:
    """Give `path` to the group named by GROUP_NAME and make it group-readable.

    Folders also get group-exec so the group can list them. With GROUP_NAME unset this does
    nothing, and the file keeps the permissions the umask gave it.
    """
    group = os.environ.get("GROUP_NAME", "").strip()
    if not group:
        return
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        raise RateError(
            f"GROUP_NAME={group!r} is not a group on this machine; fix GROUP_NAME in .env "
            "(`getent group` lists the groups) or unset it to keep default permissions"
        ) from None
    p = Path(path)
    st = p.stat()
    if st.st_gid != gid:
        try:
            os.chown(p, -1, gid)
        except PermissionError as err:
            raise RateError(
                f"cannot give {p} to group {group!r} (GROUP_NAME): {err.strerror}; "
                "join that group or fix GROUP_NAME in .env"
            ) from None
    mode = stat.S_IMODE(st.st_mode) | stat.S_IRGRP
    if stat.S_ISDIR(st.st_mode):
        mode |= stat.S_IXGRP
    if mode != stat.S_IMODE(st.st_mode):
        os.chmod(p, mode)


def apply_group_permissions_tree(root: Path) -> None:
    """Apply `apply_group_permissions` to `root` and everything below it."""
    if not os.environ.get("GROUP_NAME", "").strip():
        return
    apply_group_permissions(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            child = Path(dirpath) / name
            if not child.is_symlink():  # chown would follow it out of the tree
                apply_group_permissions(child)


def ensure_dir(path: PathLike, new: bool = False) -> Path:
    """Make the folder ``path`` and any missing parents; the ones made here get GROUP_NAME's
    group and group read and exec, as files do (folders made by ``mkdir`` alone keep the
    umask's 0700, and a group member could not open them). The one way rate makes a folder.

    ``new``: ``path`` itself must not exist (FileExistsError): two runs racing for one name
    each get their own."""
    p = Path(path)
    if new:
        ensure_dir(p.parent)
        try:
            p.mkdir()
        except FileExistsError:
            raise
        except OSError as err:
            raise write_error(p, err) from None
        apply_group_permissions(p)
        return p
    missing = []
    for level in (p, *p.parents):
        if level.is_dir():
            break
        missing.append(level)
    for level in reversed(missing):
        try:
            level.mkdir()
        except FileExistsError:
            if not level.is_dir():
                raise write_error(level, OSError(errno.ENOTDIR, "a file is in the way")) from None
            continue  # made by a concurrent run
        except OSError as err:
            raise write_error(level, err) from None
        apply_group_permissions(level)
    return p


_WRITE_HINTS = {
    errno.ENOSPC: "the disk is full: free space there (or point PROJECT_DIR elsewhere) and rerun",
    errno.EDQUOT: "the disk quota is used up: free space there (or point PROJECT_DIR "
    "elsewhere) and rerun",
    errno.EACCES: "check the folder's permissions (and PROJECT_DIR, GROUP_NAME in .env)",
    errno.EPERM: "check the folder's permissions (and PROJECT_DIR, GROUP_NAME in .env)",
    errno.EROFS: "the file system is read-only: point PROJECT_DIR at a writable folder",
}


def write_error(path: PathLike, err: OSError, verb: str = "write") -> WriteError:
    """One line for a failed write: the file, what the system said, what to do."""
    hint = _WRITE_HINTS.get(err.errno, "check the folder and rerun")
    return WriteError(
        f"cannot {verb} {path}: {err.strerror or err}; {hint}. Nothing half-written was left "
        "for a later stage to take"
    )


def file_digest(path: PathLike) -> str:
    """The SHA-256 of a file's bytes, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fsync_dir(directory: Path) -> None:
    """Flush a folder's entry list so a rename in it survives a crash (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
