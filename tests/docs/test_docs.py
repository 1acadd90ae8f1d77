"""The user documentation works as written: every block marked runnable runs, every
command block says whether it is run, every relative link resolves, every error
message that docs/troubleshooting.md quotes still exists in the source, and
docs/configuration.md documents the settings table (horderun --list-settings).

    .venv/bin/python -m pytest tests/docs -q -p no:cacheprovider

Runnable blocks run from the repository root after scripts/install.sh (scripts/test.sh
runs it first): shell with bash -euo pipefail, Python with .venv/bin/python, or through
.venv/bin/horderun -np N when the marker says np=N. A block must exit with 0, or with N
when its marker says exit=N (a block that shows an error), within timeout=S seconds
(120 by default), and print the text of expect="..." when the marker has one."""

import os
import re
import signal
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import markdown_pages as md  # noqa: E402

SOURCE_DIRS = ["core", "topology", "mpi_ops", "gpu_ops", "torch_plugin", "python", "launcher"]
SOURCE_SUFFIXES = {".cc", ".h", ".cu", ".py"}
DEFAULT_TIMEOUT = 120
HORDERUN = md.ROOT / ".venv/bin/horderun"
CONFIGURATION = md.ROOT / "docs" / "configuration.md"

ALL_BLOCKS = [b for page in md.PAGES for b in md.blocks(page)]
RUNNABLE = [b for b in ALL_BLOCKS if b.marker == "runnable"]


def command(block, script):
    if block.language in ("sh", "bash", "shell"):
        return ["bash", "-euo", "pipefail", str(script)]
    python = str(md.ROOT / ".venv/bin/python")
    if "np" in block.options:
        return [str(HORDERUN), "-np", block.options["np"], python, str(script)]
    return [python, str(script)]


def run_block(block, script, limit):
    """(exit code, output) of the block; on a timeout its whole process group is killed,
    so no rank or mpirun it started outlives the test."""
    with subprocess.Popen(command(block, script), cwd=md.ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, start_new_session=True) as proc:
        try:
            output, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            pytest.fail(f"{block.id} ran past {limit} s:\n{block.code}\n{output[-6000:]}")
    return proc.returncode, output


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_runnable_block_runs(block, tmp_path):
    assert block.language in ("sh", "bash", "shell", "python", "py"), (
        f"{block.id}: a runnable block must be sh or python, not '{block.language}'")
    script = tmp_path / ("block.py" if block.language.startswith("py") else "block.sh")
    script.write_text(block.code)
    code, output = run_block(block, script, int(block.options.get("timeout", DEFAULT_TIMEOUT)))
    expected = int(block.options.get("exit", 0))  # a block that shows an error says exit=N
    shown = f"{block.code}\n--- output ---\n{output[-6000:]}"
    assert code == expected, f"{block.id} exited with {code}, expected {expected}:\n{shown}"
    if "expect" in block.options:
        assert block.options["expect"] in output, (
            f"{block.id} did not print '{block.options['expect']}':\n{shown}")


def test_there_are_runnable_blocks_on_the_pages_that_teach_commands():
    pages = {b.page.name for b in RUNNABLE}
    for name in ("README.md", "training.md", "launcher.md", "configuration.md", "cpp.md"):
        assert name in pages, f"{name} has no block marked <!-- runnable -->"


def test_every_command_block_says_whether_it_runs():
    unmarked = [b.id for b in ALL_BLOCKS
                if b.language in md.COMMAND_LANGUAGES and not b.marker]
    assert not unmarked, (
        "these shell/Python blocks need <!-- runnable --> or <!-- not runnable: why --> on "
        f"the line before the fence: {unmarked}")


def test_relative_links_resolve():
    broken = []
    for page in md.PAGES:
        for target, line in md.links(page):
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(md.ROOT)}:{line}: {target}"
            if not linked.exists():
                broken.append(f"{where} (no file {path})")
            elif anchor and linked.suffix == ".md" and anchor not in md.anchors(linked):
                broken.append(f"{where} (no heading with anchor #{anchor} in {linked.name})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_docs_page_is_linked_from_the_readme():
    readme_targets = {t.partition("#")[0] for t, _ in md.links(md.ROOT / "README.md")}
    missing = [p.name for p in md.PAGES[1:] if f"docs/{p.name}" not in readme_targets]
    assert not missing, f"README.md links none of: {missing}"


def source_corpus():
    """The source with string literals split over lines or joined by '+' made whole."""
    texts = []
    for directory in SOURCE_DIRS:
        for path in sorted((md.ROOT / directory).rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and path.is_file():
                texts.append(path.read_text(errors="replace"))
    text = "\n".join(texts)
    text = re.sub(r"\"\s*\+?\s*\n\s*(?:rf|fr|f|r)?\"", "", text)  # "a "\n  "b" and "a " +\n "b"
    text = re.sub(r"'\s*\+?\s*\n\s*(?:rf|fr|f|r)?'", "", text)
    return re.sub(r"\"\s*\+\s*\"", "", text)


def test_quoted_error_messages_exist_in_the_source():
    corpus = source_corpus()
    page = md.ROOT / "docs" / "troubleshooting.md"
    quoted = md.quoted_messages(page)
    assert len(quoted) >= 40, f"troubleshooting.md quotes only {len(quoted)} messages in its tables"
    stale = [f"line {line}: '{piece}' of `{message}`"
             for message, line in quoted for piece in md.message_pieces(message)
             if piece not in corpus]
    assert not stale, "quoted messages whose text is no longer in the source:\n" + "\n".join(stale)


def settings_table():
    """{variable: [variable, default, shared|per-rank, flag, help]} from the settings table
    the runtime and horderun are built from."""
    run = subprocess.run([str(HORDERUN), "--list-settings"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    rows = [line.split("\t") for line in run.stdout.splitlines()]
    assert rows and all(len(row) == 5 for row in rows), run.stdout
    return {row[0]: row for row in rows}


def documented_defaults():
    """{variable: default} from the rows of docs/configuration.md's table of variables."""
    rows = re.findall(r"^\| `(HORDE_\w+)` \| ([^|]*?) \|", CONFIGURATION.read_text(), re.M)
    return dict(rows)


def test_the_configuration_table_documents_every_setting_with_its_default():
    table, documented = settings_table(), documented_defaults()
    problems = [f"{variable} is not documented" for variable in table if variable not in documented]
    problems += [f"{variable} is documented but is no setting (horderun --list-settings)"
                 for variable in documented if variable not in table]
    problems += [f"{variable}: documented default {documented[variable]}, the table's "
                 f"{table[variable][1]}"
                 for variable in table
                 if variable in documented and documented[variable] != table[variable][1]]
    assert not problems, "docs/configuration.md, ## Variables:\n" + "\n".join(problems)


def test_the_configuration_page_names_every_shared_setting():
    intro = CONFIGURATION.read_text().split("## Variables")[0]
    missing = [variable for variable, row in settings_table().items()
               if row[2] == "shared" and f"`{variable}`" not in intro]
    assert not missing, f"docs/configuration.md's list of shared settings lacks {missing}"
