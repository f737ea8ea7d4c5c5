"""What a learner hands in, taken as plain files before anything is graded.

    with taken(paths) as submissions:       # archives unpacked into a private folder
        for each in submissions:
            each.refused or grade(each.file)

A notebook is graded only if it is a regular file of its own: not a link (to a classmate's notebook,
to the instructor's solution), not a second name of another file (a hard link: both names are
refused, since neither can be told from the other), not inside a folder that is a link. Such a
notebook is "not graded: a link, not a notebook", with no credit.

A learner may hand in an archive (.zip, .tar, .tar.gz, .tgz) of their folder. It is unpacked only
if every member is a plain file or folder whose path stays inside the archive's folder, and within
MAX_FILES files and MAX_BYTES bytes unpacked (counted while unpacking, whatever the archive
declares); otherwise nothing of it is graded and the reason is named. Its notebooks are graded as
the learner the archive names (`a/bob.zip`: bob, or a/bob beside a `b/bob.zip`).
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

LINK = "not graded: a link, not a notebook"
MAX_FILES = 1000  # files in one learner's archive
MAX_BYTES = 200 * 2**20  # bytes one learner's archive may unpack to
MAX_NOTEBOOK = 64 * 2**20  # one notebook, figures and all
ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz")


class Refused(ValueError):
    """An archive that is not unpacked, with the reason an instructor reads."""


@dataclass(frozen=True)
class Submission:
    """One notebook to grade: `path` as the report shows it, `file` the file graded (an archive's
    notebook: where it was unpacked), the learner's `folder` when an archive stands for it
    (`a/bob.zip`: `a/bob`), why it is refused."""

    path: str
    file: str
    key: str  # what the results file knows it by: the same notebook of the same archive, next time
    folder: str = ""
    refused: str = ""


@contextmanager
def taken(paths: Sequence[str]) -> Iterator[list[Submission]]:
    """The submissions in `paths`, archives unpacked into a private folder removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="agentlab-intake-"))
    try:
        links = refused([p for p in paths if not is_archive(p)])
        submissions = []
        for path in paths:
            if is_archive(path):
                submissions += from_archive(path, folder / str(len(submissions)))
            else:
                key = str(Path(path).resolve())
                submissions.append(Submission(path, path, key, refused=links.get(path, "")))
        yield submissions
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def is_archive(path: str) -> bool:
    return path.lower().endswith(ARCHIVES)


def refused(paths: Sequence[str]) -> dict[str, str]:
    """path -> why it is not graded, for each notebook that is a link or a second name of a file,
    not a regular file at all, or larger than MAX_NOTEBOOK."""
    reasons = {}
    for path in paths:
        try:
            status = os.lstat(path)
        except OSError:
            continue  # missing: the grader says "no such file"
        folder_is_a_link = os.path.islink(os.path.dirname(os.path.abspath(path)))
        if stat.S_ISLNK(status.st_mode) or status.st_nlink > 1 or folder_is_a_link:
            reasons[path] = LINK
        elif not stat.S_ISREG(status.st_mode):  # a pipe or a device would be read forever
            reasons[path] = "not graded: not a file"
        elif status.st_size > MAX_NOTEBOOK:
            reasons[path] = f"not graded: larger than {MAX_NOTEBOOK // 2**20} MB"
    return reasons


def learner_of_archive(path: str) -> str:
    name = Path(path).name
    for ending in sorted(ARCHIVES, key=len, reverse=True):
        if name.lower().endswith(ending):
            return name[: -len(ending)]
    return Path(path).stem


def from_archive(path: str, into: Path) -> list[Submission]:
    """The notebooks of one archive, unpacked into `into`; one refused line if it cannot be."""
    folder = os.path.join(os.path.dirname(path), learner_of_archive(path))
    try:
        if Path(path).is_symlink():
            raise Refused("not graded: the archive is a link")
        files = unpack(Path(path), into)
    except Refused as why:
        return [Submission(path, path, str(Path(path).resolve()), folder, str(why))]
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError) as error:
        why = f"not graded: the archive cannot be read ({type(error).__name__})"
        return [Submission(path, path, str(Path(path).resolve()), folder, why)]
    notebooks = sorted(f for f in files if f.suffix == ".ipynb")
    if not notebooks:
        why = "not graded: no notebook in the archive"
        return [Submission(path, path, str(Path(path).resolve()), folder, why)]
    key = str(Path(path).resolve())
    inside = {n: n.relative_to(into).as_posix() for n in notebooks}
    return [Submission(f"{path}:{i}", str(n), f"{key}:{i}", folder) for n, i in inside.items()]


def unpack(archive: Path, into: Path) -> list[Path]:
    """Unpack `archive` into the new folder `into`, plain files only; raise Refused with the reason."""
    if not archive.is_file() or archive.stat().st_size > MAX_BYTES:
        raise Refused(f"not graded: the archive is not a file of at most {MAX_BYTES // 2**20} MB")
    into.mkdir(parents=True)
    if archive.name.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            members = [(i.filename, _zip_kind(i), (lambda i=i: z.open(i))) for i in z.infolist()]
            return _write_all(members, into)
    with tarfile.open(archive) as tar:
        members = []
        for m in tar:  # one header at a time: a tar of a million empty members stops at the cap
            members.append((m.name, _tar_kind(m), (lambda m=m: tar.extractfile(m))))
            if len(members) > 2 * MAX_FILES:
                raise Refused(f"not graded: the archive holds more than {MAX_FILES} files")
        return _write_all(members, into)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "link"
    return "folder" if info.is_dir() else "file"


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.issym() or member.islnk():
        return "link"
    return "folder" if member.isdir() else "file" if member.isfile() else "other"


def _write_all(members: list, into: Path) -> list[Path]:
    """Check every member before writing any, then write, counting the bytes as they come."""
    files = [m for m in members if m[1] != "folder"]
    if len(files) > MAX_FILES:
        raise Refused(f"not graded: the archive holds more than {MAX_FILES} files")
    for name, kind, _ in members:
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
            raise Refused(f"not graded: the archive has a path that leaves its folder ({name})")
        if kind == "link":
            raise Refused(f"not graded: the archive holds a link ({name})")
        if kind == "other":
            raise Refused(f"not graded: the archive holds something that is not a file ({name})")
    written, total = [], 0
    for name, kind, opened in members:
        target = into.joinpath(*PurePosixPath(name.replace("\\", "/")).parts)
        if kind == "folder":
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with opened() as source, os.fdopen(os.open(target, flags, 0o644), "wb") as out:
            while chunk := source.read(2**20):
                total += len(chunk)
                if total > MAX_BYTES:
                    raise Refused(f"not graded: the archive unpacks to more than {MAX_BYTES // 2**20} MB")
                out.write(chunk)
        written.append(target)
    return written
