"""Reading raw trace files as text lines (the extract step every file-based family shares).

Plain files and files compressed as ``.gz``, ``.bz2``, ``.zip`` (one member) or
``.tar.bz2`` / ``.tar.gz`` (one data member besides notices) are read whole into memory on
the driver: the samples are small and larger inputs are still far below the driver's memory.
Every failure to read is an :class:`~pipelines.errors.InputError` naming the file.
"""

from __future__ import annotations

import bz2
import gzip
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Sequence

import pyarrow as pa

from .errors import InputError

LINE_END = re.compile(r"\r\n|\r|\n")
r"""A line end: ``\r\n``, ``\n`` or a lone ``\r`` (universal newlines, as Python reads text files)."""

NOTICE_SUFFIXES = (".txt", ".md")
"""Members of an archive that are documentation, not data (e.g. a copyright notice)."""


def read_lines(path: Path, *, encoding: str = "utf-8") -> list[str]:
    """The text lines of ``path`` (decompressed), without line ends, a final empty line or a
    leading byte order mark (spreadsheets write one before the header).

    A line ends at ``\\r\\n``, ``\\n`` or a lone ``\\r``, as Python's text files and the engine's
    CLI have it, so the lines are numbered alike.

    Undecodable bytes are replaced (``U+FFFD``) rather than failing the file: a row with
    them is judged by the family's checks like any other.

    Examples
    --------
    >>> import tempfile, gzip
    >>> path = Path(tempfile.mkdtemp()) / "a.csv.gz"
    >>> _ = path.write_bytes(gzip.compress(b"\\xef\\xbb\\xbfx,y\\r\\n1,2\\n"))
    >>> read_lines(path)
    ['x,y', '1,2']
    >>> _ = path.write_bytes(gzip.compress(b"x,y\\r1,2\\r\\n3,4\\r"))
    >>> read_lines(path)
    ['x,y', '1,2', '3,4']
    """
    data = _read_bytes(Path(path))
    lines = LINE_END.split(data.decode(encoding, errors="replace").removeprefix("\ufeff"))
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _read_bytes(path: Path) -> bytes:
    name = path.name.lower()
    try:
        if name.endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                members = [m for m in archive.infolist() if not m.is_dir()]
                if len(members) != 1:
                    raise InputError(f"{path}: expected one CSV inside the zip, found {len(members)} files")
                return archive.read(members[0])
        if name.endswith((".tar.bz2", ".tbz2", ".tar.gz", ".tgz", ".tar")):
            with tarfile.open(path) as archive:
                members = [m for m in archive.getmembers()
                           if m.isfile() and not m.name.lower().endswith(NOTICE_SUFFIXES)]
                if len(members) != 1:
                    raise InputError(f"{path}: expected one data file inside the archive, found {len(members)}")
                return archive.extractfile(members[0]).read()
        if name.endswith(".gz"):
            return gzip.decompress(path.read_bytes())
        if name.endswith(".bz2"):
            return bz2.decompress(path.read_bytes())
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except (zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile, OSError, EOFError, ValueError) as error:
        raise InputError(f"{path}: cannot read the file ({error})") from None


def lines_table(paths: Sequence[Path], lines_per_file: Sequence[list[str]], *, first_line: Sequence[int] | None = None,
                line_numbers: Sequence[Sequence[int]] | None = None, **constant_columns: Sequence[object]) -> pa.Table:
    """One row per line: ``source_index``, ``source_file`` (name), ``line`` (1-based number in the
    file: consecutive from ``first_line``, or each row's from ``line_numbers``), ``raw`` (text),
    plus one column per keyword holding one value per file.

    Examples
    --------
    >>> lines_table([Path("a.csv")], [["1,2", "3,4"]], first_line=[2], month=[201901]).to_pylist()[1]
    {'source_index': 0, 'source_file': 'a.csv', 'line': 3, 'raw': '3,4', 'month': 201901}
    """
    first_line = first_line or [1] * len(paths)
    parts = []
    for index, (path, lines) in enumerate(zip(paths, lines_per_file)):
        columns = {
            "source_index": pa.array([index] * len(lines), pa.int32()),
            "source_file": pa.array([Path(path).name] * len(lines), pa.string()),
            "line": pa.array(line_numbers[index] if line_numbers is not None
                             else range(first_line[index], first_line[index] + len(lines)), pa.int64()),
            "raw": pa.array(lines, pa.string()),
        }
        for name, values in constant_columns.items():
            columns[name] = pa.array([values[index]] * len(lines))
        parts.append(pa.table(columns))
    return pa.concat_tables(parts)


def per_file(values: Sequence[object]) -> "Column":
    """A Spark column holding ``values[source_index]`` for each row: a literal when every file
    has the same value (the usual case: one header layout for all files), else a ``CASE``."""
    from pyspark.sql import functions as F

    if len(set(values)) == 1:
        return F.lit(values[0])
    column = F.lit(values[-1])
    for index, value in reversed(list(enumerate(values[:-1]))):
        column = F.when(F.col("source_index") == index, F.lit(value)).otherwise(column)
    return column
