"""The one reader of a user's file (load_text_file, whole; text_chunks, what predict streams): every file it cannot
read is one line that names the file, its line where there is one, and the fix; both ways of reading agree."""

from __future__ import annotations

import json

import pytest

from hf_textcluster.data import load_text_file
from hf_textcluster.data.text_files import text_chunks


def _whole(path):
    return load_text_file(path)["text"]


def _streamed(path):
    chunks, _ = text_chunks(path, chunk_size=2)
    return [text for chunk in chunks for text in chunk]


READERS = pytest.mark.parametrize("read", [_whole, _streamed], ids=["whole", "streamed"])


@READERS
@pytest.mark.parametrize(
    "name, content, line, fix",
    [
        ("binary.txt", bytes(range(256)) * 4, None, r"is not a text file .*save it as UTF-8"),
        ("utf16-without-bom.csv", "text\nhello\n".encode("utf-16-le"), None, r"not a text file .*save it as UTF-8"),
        ("latin1.txt", "first\nsecond\ncaf\xe9\n".encode("latin-1"), 3, r"not UTF-8 text .*save it as UTF-8"),
        ("latin1.csv", "text\nok\ncaf\xe9 au lait\n".encode("latin-1"), 3, r"not UTF-8 text .*save it as UTF-8"),
        ("empty.csv", b"", None, r"is empty \(0 bytes\)"),
        ("blank.csv", b"\n\n", None, r"has no header row: its first line names the columns"),
        ("unclosed.csv", b'text\nok\n"two\nlines"\n"never closed\nmore\n', 5, r"a quote .* never closes; close it"),
        ("extra-field.csv", b"text,label\nok,1\nhello, world,2\n", 3, r"3 fields where the header has 2; quote a text"),
        ("extra-field.tsv", b"text\tlabel\nok\t1\nhello\tworld\t2\n", 3, r"3 fields where the header has 2; quote a"),
        ("broken.jsonl", b'{"text": "ok"}\n\n{"text": \n', 3, r"not JSON .*each line of a JSON Lines file is one"),
        ("broken.json", b'[{"text": "a"},\n {"text": }]\n', 2, r"not JSON .*holds one array of objects"),
        ("number.jsonl", b'{"text": "ok"}\n\n{"text": 5}\n', 3, r"is int \(5\), not a string"),
        ("no-field.jsonl", b'{"text": "ok"}\n{"body": "x"}\n', 2, r"has no field 'text' .*Pass text_column="),
        ("texts.parquet", b"not parquet at all", None, r"is not a Parquet file .*write it again"),
        ("nul.txt", b"first\nsec\0ond\n", 2, r"a NUL byte \(\\0\) inside the text; remove the NUL bytes"),
        ("nul.jsonl", b'{"text": "ok"}\n{"text": "a\0b"}\n', 2, r"a NUL byte .*tr -d '\\000' < nul.jsonl"),
        ("late-nul.txt", b"ok\n" * 40_000 + b"a\0b\n", 40_001, r"a NUL byte .*remove the NUL bytes"),  # past 64 KiB
        ("late-nul.csv", b"text\n" + b"ok\n" * 40_000 + b"a\0b\n", 40_002, r"a NUL byte .*remove the NUL bytes"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_line_naming_it_its_line_and_the_fix(
    read, name, content, line, fix, tmp_path
):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises((ValueError, TypeError), match=fix) as info:
        read(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    if line is not None:
        assert f"line {line}" in message.lower(), message


@READERS
def test_a_folder_is_named_as_a_folder_not_as_a_missing_file(read, tmp_path):
    folder = tmp_path / "texts.txt"
    folder.mkdir()
    with pytest.raises(ValueError, match=r"texts\.txt is a folder, not a file: pass a file of texts") as info:
        read(folder)
    assert "not found" not in str(info.value)


@READERS
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
@pytest.mark.parametrize("suffix", [".txt", ".csv", ".jsonl"])
def test_utf16_and_utf32_files_with_a_byte_order_mark_are_read(read, encoding, suffix, tmp_path):
    texts = ["café au lait", "naïve question", "third, with a comma"]
    body = {
        ".txt": "\n".join(texts) + "\n",
        ".csv": "text\n" + "".join(f'"{t}"\n' for t in texts),
        ".jsonl": "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts),
    }[suffix]
    path = tmp_path / f"texts{suffix}"
    data = body.encode(encoding)
    path.write_bytes(data if encoding != "utf-16-be" else b"\xfe\xff" + data)  # the codec writes no mark itself
    assert read(path) == texts


def test_a_csv_row_cut_at_an_unquoted_comma_is_an_error_when_streamed_too(tmp_path):
    """Streaming once read only the text column and dropped a row's extra fields: "hello, world" became "hello"."""
    path = tmp_path / "texts.csv"
    path.write_text("text,label\nok,1\nhello, world,2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 3: 3 fields"):
        _streamed(path)


def test_a_label_column_no_record_has_lists_the_fields_there_are(tmp_path):
    path = tmp_path / "texts.jsonl"
    path.write_text('{"text": "a", "team": "x"}\n{"text": "b", "team": "y"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"no column 'label'\. Available columns: \['team', 'text'\]\. Pass label_co"):
        load_text_file(path, label_column="label")
    dataset = load_text_file(path, label_column="team")
    assert dataset["text"] == ["a", "b"] and dataset.features["label"].names == ["x", "y"]


def test_a_header_without_rows_holds_no_texts(tmp_path):
    path = tmp_path / "texts.csv"
    path.write_text("text,label\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"texts\.csv holds no texts"):
        load_text_file(path)
