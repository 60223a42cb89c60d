"""Atomic file writes: every file aucopt writes goes through :func:`atomic_write`.

The content is written to a temporary file in the target's directory, flushed and
fsynced, then moved over the target with ``os.replace`` (atomic on POSIX and
Windows within one file system) and the directory is fsynced. A write that fails
or is killed part-way (disk full, quota, file-size limit, Ctrl-C, a crash) leaves
the previous file as it was; a failed write also removes its temporary file (a
killed process cannot, and leaves a hidden ``.<name>.<random>.tmp`` beside it).

A target that exists and is not a regular file (``/dev/stdout``, a named pipe) is
written in place: it cannot be replaced, and holds no previous content to lose.
"""
import contextlib
import os
import secrets
import stat

__all__ = ["atomic_write"]


@contextlib.contextmanager
def atomic_write(path):
    """Write a file so that a failure leaves the previous one as it was.

    A context manager that yields a binary file object: a new file beside ``path``
    which replaces ``path`` (``os.replace``, after ``fsync``) when the block ends
    without an exception, and only then. An exception, Ctrl-C or a full disk inside
    the block leaves ``path`` untouched and removes the new file. Every file aucopt
    writes goes through it (models, svmlight files, figures); scripts can use it
    for their own results.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write; through a symlink, its target. A target that exists and
        is not a regular file (``/dev/stdout``, a named pipe) is written in place.

    Examples
    --------
    >>> import json, os, tempfile
    >>> from aucopt.datasets import atomic_write
    >>> path = os.path.join(tempfile.mkdtemp(), "result.json")
    >>> with atomic_write(path) as fh:
    ...     _ = fh.write(json.dumps({"auc": 0.97}).encode())
    >>> with open(path) as fh:
    ...     json.load(fh)
    {'auc': 0.97}
    """
    target = os.path.realpath(os.fspath(path))  # through a symlink: replace its target
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(target, "wb") as fh:
            yield fh
        return
    directory, name = os.path.split(target)
    fd, tmp = _temporary(directory, name)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, stat.S_IMODE(mode))  # the replaced file's permissions
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_directory(directory)


def _temporary(directory, name):
    """A new file beside the target (mode 0666 less the umask, as ``open`` gives)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot create a temporary file beside {name} in {directory}")


def _sync_directory(directory):
    """Make the rename durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
