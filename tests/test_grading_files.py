"""What the grader takes from a learner is a plain file: a notebook that is a link (to a classmate's,
to the instructor's solution) or a second name of another file is not graded; an archive is unpacked
only when it holds plain files inside its own folder, within size caps; and the grader writes into
the folder it shares with the sandbox without ever following a link the learner left there."""

import io
import json
import os
import shutil
import tarfile
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from agentlab.course import intake, sandbox
from agentlab.course.cli import main

ROOT = Path(__file__).resolve().parents[1]
SOLVED_02 = ROOT / "solutions" / "02_plans_are_dags.ipynb"
NAME_02 = "02_plans_are_dags.ipynb"
OUT = "not graded: the archive has a path that leaves its folder"


def grade(tmp_path: Path, *paths: Path) -> dict:
    """`agentlab course grade` on the paths, as an instructor runs it; the JSON report by learner."""
    out = io.StringIO()
    args = ["course", "grade", *map(str, paths), "--timeout", "30", "--results", "-", "--json", "-"]
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(args)
    return {n["learner"]: n for n in json.loads(out.getvalue())["notebooks"]}


def passed(notebook: dict) -> int:
    return sum(r["status"] == "passed" for r in notebook["results"])


# --- a notebook that is a link ---------------------------------------------------------------------


@pytest.fixture
def classroom(tmp_path):
    """An honest learner (alice, the solution's answers) and the instructor's solutions folder."""
    alice = tmp_path / "class" / "alice" / NAME_02
    alice.parent.mkdir(parents=True)
    shutil.copy(SOLVED_02, alice)
    solutions = tmp_path / "kit" / "solutions" / NAME_02
    solutions.parent.mkdir(parents=True)
    shutil.copy(SOLVED_02, solutions)
    return tmp_path


@pytest.mark.parametrize("to", ["classmate", "solutions"])
def test_a_notebook_that_links_elsewhere_is_not_graded(classroom, to):
    mallory = classroom / "class" / "mallory" / NAME_02
    mallory.parent.mkdir()
    target = classroom / ("class/alice" if to == "classmate" else "kit/solutions") / NAME_02
    mallory.symlink_to(os.path.relpath(target, mallory.parent))
    by = grade(classroom, mallory)
    assert passed(by["mallory"]) == 0
    assert by["mallory"]["broken"] == "not graded: a link, not a notebook"
    assert {r["status"] for r in by["mallory"]["results"]} == {"not graded"}  # a line per exercise, no credit


def test_a_hard_link_to_a_classmates_notebook_is_not_graded(classroom):
    mallory = classroom / "class" / "mallory" / NAME_02
    mallory.parent.mkdir()
    os.link(classroom / "class" / "alice" / NAME_02, mallory)
    reasons = intake.refused([str(mallory), str(classroom / "class" / "alice" / NAME_02)])
    assert set(reasons.values()) == {"not graded: a link, not a notebook"}  # both names of one file
    assert passed(grade(classroom, mallory)["mallory"]) == 0


def test_a_folder_that_links_elsewhere_is_not_graded(classroom):
    (classroom / "class" / "mallory").symlink_to(classroom / "class" / "alice")
    mallory = classroom / "class" / "mallory" / NAME_02
    assert intake.refused([str(mallory)]) == {str(mallory): "not graded: a link, not a notebook"}


def test_a_notebook_that_is_a_pipe_or_a_link_to_a_device_is_refused_without_being_read(tmp_path):
    pipe = tmp_path / "class" / "mallory" / NAME_02
    pipe.parent.mkdir(parents=True)
    os.mkfifo(pipe)  # opening it to read would wait forever
    zero = tmp_path / "class" / "eve" / NAME_02
    zero.parent.mkdir()
    zero.symlink_to("/dev/zero")  # reading it would fill the memory
    by = grade(tmp_path, pipe, zero)
    assert by["mallory"]["broken"] == "not graded: not a file"
    assert by["eve"]["broken"] == "not graded: a link, not a notebook"


# --- archives --------------------------------------------------------------------------------------


def tar_with(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def plain(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def test_an_honest_archive_is_unpacked_and_graded(tmp_path):
    archive = tmp_path / "class" / "bob.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as z:
        z.write(SOLVED_02, NAME_02)
        z.writestr("notes/data.txt", "my notes")
    by = grade(tmp_path, archive)
    assert passed(by["bob"]) == 3, by


@pytest.mark.parametrize(
    "kind,why",
    [
        ("symlink", "not graded: the archive holds a link (02_plans_are_dags.ipynb)"),
        ("hardlink", "not graded: the archive holds a link (02_plans_are_dags.ipynb)"),
        ("climbs", f"{OUT} (../02_plans_are_dags.ipynb)"),
        ("absolute", f"{OUT} (/tmp/02_plans_are_dags.ipynb)"),
    ],
)
def test_an_archive_with_a_link_or_a_path_out_is_refused(tmp_path, kind, why):
    archive = tmp_path / "class" / "mallory.tar.gz"
    archive.parent.mkdir()
    if kind in ("symlink", "hardlink"):
        info = tarfile.TarInfo(NAME_02)
        info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
        info.linkname = "../alice/" + NAME_02 if kind == "symlink" else "other.ipynb"
        tar_with(archive, [(info, None)])
    else:
        name = "../" + NAME_02 if kind == "climbs" else "/tmp/" + NAME_02
        tar_with(archive, [plain(name, SOLVED_02.read_bytes())])
    by = grade(tmp_path, archive)
    assert by["mallory"]["broken"] == why
    assert passed(by["mallory"]) == 0
    assert not (tmp_path / NAME_02).exists() and not (Path("/tmp") / NAME_02).exists()


def test_two_archives_of_the_same_name_in_two_sections_are_two_learners(tmp_path):
    for section in ("a", "b"):
        (tmp_path / section).mkdir()
        tar_with(tmp_path / section / "bob.tar", [plain("../" + NAME_02, b"{}")])
    by = grade(tmp_path, tmp_path / "a" / "bob.tar", tmp_path / "b" / "bob.tar")
    assert sorted(by) == ["a/bob", "b/bob"]


def test_a_zip_with_a_link_or_a_tar_with_a_pipe_is_refused(tmp_path):
    archive = tmp_path / "mallory.zip"
    with zipfile.ZipFile(archive, "w") as z:
        link = zipfile.ZipInfo(NAME_02)
        link.external_attr = (0o120777 << 16)  # a symlink, as zip keeps one
        z.writestr(link, "../alice/" + NAME_02)
    with pytest.raises(intake.Refused, match="holds a link"):
        intake.unpack(archive, tmp_path / "zip")
    pipe = tarfile.TarInfo("pipe")
    pipe.type = tarfile.FIFOTYPE
    with pytest.raises(intake.Refused, match="not a file"):
        intake.unpack(tar_with(tmp_path / "pipe.tar", [(pipe, None)]), tmp_path / "tar")


def test_a_zip_with_a_path_out_is_refused(tmp_path):
    archive = tmp_path / "class" / "mallory.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("../../" + NAME_02, SOLVED_02.read_bytes())
    by = grade(tmp_path, archive)
    assert "leaves its folder" in by["mallory"]["broken"] and passed(by["mallory"]) == 0
    assert not list(tmp_path.rglob(NAME_02))


def test_a_zip_bomb_is_refused_without_being_unpacked(tmp_path, monkeypatch):
    monkeypatch.setattr(intake, "MAX_BYTES", 16 * 2**20)  # the real cap is 200 MB: the same, only slower
    archive = tmp_path / "class" / "mallory.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("big.bin", "w") as member:
            chunk = bytes(2**20)
            for _ in range(64):  # 64 MiB of zeros, 64 kB packed
                member.write(chunk)
        z.write(SOLVED_02, NAME_02)
    assert archive.stat().st_size < 2**20
    by = grade(tmp_path, archive)
    assert by["mallory"]["broken"] == "not graded: the archive unpacks to more than 16 MB"
    assert passed(by["mallory"]) == 0
    assert not list(Path("/tmp").glob("agentlab-intake-*/*/big.bin"))  # what it unpacked is gone


def test_an_archive_of_too_many_files_is_refused(tmp_path):
    archive = tmp_path / "mallory.tar"
    tar_with(archive, [plain(f"f{i}.txt", b"x") for i in range(intake.MAX_FILES + 1)])
    with pytest.raises(intake.Refused, match="more than"):
        intake.unpack(archive, tmp_path / "out")


# --- the grader writes into the shared folder without following links -----------------------------


def test_the_travel_check_never_writes_where_a_link_points(tmp_path):
    """The learner's function swaps the census the grader wrote for a link (and plants one for its
    journal); the grader then corrects the census. No file appears where the links point."""
    from agentlab.agents import Agent
    from agentlab.course.checks import find

    planted = tmp_path / "planted.db"

    def census_clerk(path):
        os.remove(path)
        os.symlink(planted, path)
        os.symlink(tmp_path / "planted-journal", path + "-journal")
        return Agent("clerk", lambda step, context: "unknown")

    cases = list(find("10.travel").cases(census_clerk))
    assert not planted.exists() and not (tmp_path / "planted-journal").exists()
    assert not cases[-1].passed  # and the agent, which read nothing, fails the last case


def test_put_replaces_a_link_and_never_writes_through_it(tmp_path):
    outside = tmp_path / "outside.txt"
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "census.db").symlink_to(outside)
    where = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        sandbox.put(where, "census.db", b"the grader's")
    finally:
        os.close(where)
    assert not outside.exists()
    assert not (folder / "census.db").is_symlink() and (folder / "census.db").read_bytes() == b"the grader's"
    assert os.listdir(folder) == ["census.db"]


def test_the_travel_swap_graded_for_real_creates_nothing_outside(tmp_path):
    """The same attack in a notebook graded by `agentlab course grade`, in its sandbox."""
    import nbformat

    planted = tmp_path / "planted.db"
    attack = f"""import os
from agentlab.agents import Agent
def census_clerk(path):
    for name, target in ((path, {str(planted)!r}), (path + "-journal", {str(planted) + "-journal"!r})):
        try:
            if os.path.lexists(name):
                os.remove(name)
            os.symlink(target, name)
        except OSError:
            pass
    return Agent("clerk", lambda step, context: "unknown")"""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(attack)]
    path = tmp_path / "class" / "mallory" / "10_across_machines.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    by = grade(tmp_path, path)
    assert {r["exercise"]: r["status"] for r in by["mallory"]["results"]}["10.travel"] == "failed"
    assert not planted.exists() and not Path(str(planted) + "-journal").exists()


def test_a_notebook_that_forks_and_allocates_is_bounded_and_its_answers_still_graded(tmp_path):
    """A fork bomb and a 10 GB allocation after the learner's (right) answers, graded by `agentlab
    course grade`: each stops at its limit and the kernel lives on, or the cell takes the answers
    away; within the 30 s an attack may take (the other limits: test_sandbox_limits)."""
    import time

    import nbformat

    away = "    del longest_chain, finish_time, longest_chain_first  # not stopped: the test sees it"
    attacks = [
        "import os, time\nn = 0\ntry:\n    while n < 2000:\n        if os.fork() == 0:\n"
        "            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\n"
        f"if n >= 2000:\n{away}",
        f"try:\n    block = bytearray(10 * 2**30)\nexcept MemoryError:\n    pass\nelse:\n{away}",
    ]
    nb = nbformat.read(SOLVED_02, as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(a) for a in attacks]
    path = tmp_path / "class" / "mallory" / NAME_02
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    started = time.monotonic()
    by = grade(tmp_path, path)
    assert time.monotonic() - started < 30
    assert passed(by["mallory"]) == 3, by["mallory"]
