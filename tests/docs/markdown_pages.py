"""Reading the user documentation (README.md and docs/*.md) as the docs test needs it:
fenced blocks with their markers, relative links, GitHub's heading anchors, and the
error messages quoted in docs/troubleshooting.md."""

import dataclasses
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)(.*)$")
MARKER = re.compile(r"^\s*<!--\s*(runnable|not runnable)\b(.*?)-->\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# Languages of the blocks that are commands: each is marked runnable or says why not.
COMMAND_LANGUAGES = {"sh", "bash", "shell", "console", "python", "py"}


@dataclasses.dataclass
class Block:
    page: pathlib.Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    marker: str  # "runnable", "not runnable" or ""
    options: dict  # from the marker: 'np=2 expect="a b"' -> {"np": "2", "expect": "a b"}

    @property
    def id(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _marker(line):
    match = MARKER.match(line)
    if not match:
        return "", {}
    if match.group(1) != "runnable":
        return match.group(1), {}
    pairs = re.findall(r'(\w+)=("[^"]*"|\S+)', match.group(2))
    return match.group(1), {key: value.strip('"') for key, value in pairs}


def blocks(page):
    """Every fenced block of a page, with the marker on the line just before it."""
    lines = page.read_text().split("\n")
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, ticks = len(opening.group(1)), opening.group(2)
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(ticks):
            end += 1
        code = "\n".join(line[indent:] for line in lines[i + 1:end]) + "\n"
        marker, options = _marker(lines[i - 1]) if i > 0 else ("", {})
        found.append(Block(page, i + 1, opening.group(3).lower(), code, marker, options))
        i = end + 1
    return found


def prose(page):
    """The page without its fenced blocks and inline code, where links are meant."""
    text, inside = [], False
    for line in page.read_text().split("\n"):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            text.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(text)


def links(page):
    """(target, line number) of every relative link of a page."""
    found = []
    for number, line in enumerate(prose(page).split("\n"), 1):
        for target in LINK.findall(line):
            if not re.match(r"^[a-z]+:", target):
                found.append((target, number))
    return found


def github_anchor(heading):
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page):
    """The anchors of a page's headings, with GitHub's -1, -2 suffixes for repeats."""
    seen, found = {}, set()
    for line in prose(page).split("\n"):
        match = HEADING.match(line)
        if match:
            base = github_anchor(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def quoted_messages(page):
    """The messages quoted in the first cell of a table row: `text` with <placeholders>."""
    found = []
    for number, line in enumerate(page.read_text().split("\n"), 1):
        if not line.startswith("| `"):
            continue
        first_cell = re.split(r"(?<!\\)\|", line)[1]
        for message in re.findall(r"`([^`]+)`", first_cell):
            found.append((message.replace("\\|", "|"), number))
    return found


def message_pieces(message):
    """The literal parts of a quoted message, between <placeholders> and '...'."""
    parts = re.split(r"<[^<>]*>|\.\.\.|…", message)
    pieces = [part.strip(" ';") for part in parts]
    return [piece for piece in pieces if len(piece) >= 4]
