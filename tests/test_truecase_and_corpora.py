"""One truecaser per language shared by parallel text and the embedding corpus; monolingual
sources read as released (gzip, tar members, lines split on "\\n" only); coverage of the target
vocabulary by the vectors; the corpus choice in the config."""

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest
import yaml

from workflow_src.data.archives import Undecodable
from workflow_src.data.embeddings import coverage, monolingual_sources
from workflow_src.data.preprocess import (
    load_truecaser,
    preprocess_monolingual,
    preprocess_parallel,
    read_source,
    tokenize,
    tokenize_monolingual,
    tokenize_parallel,
    train_truecaser,
)
from workflow_src.data.statistics import quantities

ROOT = Path(__file__).resolve().parents[1]


def write_raw(raw: Path, pair: str, splits: dict[str, tuple[list[str], list[str]]]) -> None:
    raw.mkdir(parents=True, exist_ok=True)
    src, tgt = pair.split("-")
    for split, (s, t) in splits.items():
        (raw / f"{split}.{src}").write_text("".join(x + "\n" for x in s), encoding="utf-8")
        (raw / f"{split}.{tgt}").write_text("".join(x + "\n" for x in t), encoding="utf-8")


# -- the shared truecaser ------------------------------------------------------------------------
def test_a_word_cased_differently_in_parallel_and_monolingual_text_gets_one_casing_and_a_vector(tmp_path):
    # Monolingual English writes "apple" in lower case; the parallel target side capitalises it
    # mid-sentence. A truecaser per side would keep "Apple" in the parallel text, a word the
    # embedding corpus never has.
    mono = tmp_path / "news.en.gz"
    with gzip.open(mono, "wt", encoding="utf-8") as f:
        f.write("We ate an apple.\n\nThe apple was red.\nShe likes the apple.\nThe cat sat.\n")
    tokenized = tmp_path / "emb" / "tokenized.txt"
    tokenize_monolingual("en", [str(mono)], tokenized)
    model = tmp_path / "truecase" / "en.model"
    train_truecaser((line for line in tokenized.read_text().splitlines()), model)
    preprocess_monolingual("en", tokenized, tmp_path / "emb" / "corpus.txt", load_truecaser(model))
    corpus_words = set((tmp_path / "emb" / "corpus.txt").read_text().split())

    raw, tok_dir, out = tmp_path / "raw", tmp_path / "tokenized", tmp_path / "tok"
    write_raw(
        raw,
        "fr-en",
        {
            "train": (["Il mange une Pomme.", "Le chat."], ["He eats an Apple.", "The cat."]),
            "dev": (["La pomme."], ["The Apple."]),
            "test": (["Un chat."], ["A cat."]),
        },
    )
    tokenize_parallel("fr-en", raw, tok_dir)
    fr_model = tmp_path / "truecase" / "fr.model"
    train_truecaser(tok_dir.joinpath("train.fr").read_text().splitlines(), fr_model)
    preprocess_parallel(
        "fr-en", tok_dir, out, {"fr": load_truecaser(fr_model), "en": load_truecaser(model)}, max_len=50
    )

    train_en = (out / "train.en").read_text().split()
    assert "apple" in train_en and "Apple" not in train_en
    assert (out / "dev.en").read_text() == "the apple .\n"
    counts = [(w, train_en.count(w)) for w in dict.fromkeys(train_en)]
    missing = {w for w, _ in coverage(corpus_words, counts, size=10)["most_frequent_without_vector"]}
    assert missing == {"He", "eats"}  # words the embedding corpus lacks in any casing; "apple" has its vector

    own = train_truecaser(tok_dir.joinpath("train.en").read_text().splitlines(), tmp_path / "own.en")
    assert "Apple" in own.truecase("He eats an Apple .", return_str=True, use_known=True).split()  # what sharing fixes


def test_preprocess_parallel_truecases_cleans_counts_and_checks_lengths(tmp_path):
    raw, tok_dir = tmp_path / "raw", tmp_path / "tokenized"
    write_raw(
        raw,
        "fr-en",
        {
            "train": (
                ["Le chat dort.", " ".join(["mot"] * 19) + ".", "Bonjour."],
                ["The cat sleeps.", "One.", "Hello."],
            ),
            "dev": (["Le chien."], ["The dog."]),
            "test": (["Le chien."], ["The dog."]),
        },
    )
    tokenize_parallel("fr-en", raw, tok_dir)
    models = {
        lang: train_truecaser((tok_dir / f"train.{lang}").read_text().splitlines(), tmp_path / f"{lang}.model")
        for lang in ("fr", "en")
    }
    stats = preprocess_parallel("fr-en", tok_dir, tmp_path / "tok", models, max_len=50, max_ratio=9)
    assert (tmp_path / "tok" / "train.en").read_text() == "The cat sleeps .\nHello .\n"  # ratio 10 > 9: dropped
    assert stats["train"] == {
        "sentences_raw": 3,
        "sentences": 2,
        "tokens_fr": 6,
        "tokens_en": 6,
        "types_fr": 5,
        "types_en": 5,
    }
    assert json.loads((tmp_path / "tok" / "stats.json").read_text()) == stats
    assert not [p for p in (tmp_path / "tok").iterdir() if p.name.startswith(".")]  # no temporary files left
    (tok_dir / "dev.en").write_text("the dog .\nextra .\n")
    with pytest.raises(ValueError, match=r"dev\.fr and dev\.en differ in length"):
        preprocess_parallel("fr-en", tok_dir, tmp_path / "tok2", models, max_len=50)


def test_tokenized_lines_hold_no_line_break_of_any_kind():
    assert tokenize("a\rb\x85c\u2028d\x0ce", "en") == "a b c d e"


def test_a_model_larger_than_sacremoses_loading_limit_loads(tmp_path, monkeypatch):
    from sacremoses import MosesTruecaser

    train_truecaser(["Paris is big .", "we saw Paris .", "we saw the cat ."], tmp_path / "m")
    monkeypatch.setattr(MosesTruecaser, "MAX_MODEL_ENTRIES", 2)
    assert (
        load_truecaser(tmp_path / "m").truecase("The cat saw Paris .", return_str=True, use_known=True)
        == "the cat saw Paris ."
    )


# -- reading monolingual sources -----------------------------------------------------------------
LINES_BYTES = b"one\rstill one\xc2\x85 and one\n\xe2\x80\xa8two \xff bad\nthree\r\n"


def test_plain_gzip_source_splits_on_newline_only_and_counts_undecodable_bytes(tmp_path):
    path = tmp_path / "news.gz"
    path.write_bytes(gzip.compress(LINES_BYTES))
    report = Undecodable()
    lines = list(read_source(str(path), report))
    assert lines == ["one\rstill one\x85 and one", "\u2028two \ufffd bad", "three\r"]  # tokenizing makes \r a space
    assert (report.lines, report.first) == (1, f"{path}, line 2")


def test_tar_members_plain_and_gzip_read_as_a_stream(tmp_path):
    archive = tmp_path / "mono.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in (
            ("training/europarl-v7.fr", b"autre\n"),
            ("training/europarl-v7.en", LINES_BYTES),
            ("news/news.en.gz", gzip.compress(b"a\nb\n")),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert list(read_source(f"{archive}::training/europarl-v7.en"))[0] == "one\rstill one\x85 and one"
    assert list(read_source(f"{archive}::news/news.en.gz")) == ["a", "b"]
    with pytest.raises(ValueError, match=r"mono\.tgz: no member 'training/europarl-v7\.de'"):
        list(read_source(f"{archive}::training/europarl-v7.de"))


def test_tokenize_monolingual_keeps_order_drops_blank_lines_and_caps(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.gz"
    first.write_text("First line.\n\n   \nSecond line.\n")
    second.write_bytes(gzip.compress(b"Third line.\nFourth line.\n"))
    out = tmp_path / "tokenized.txt"
    stats = tokenize_monolingual("en", [str(first), str(second)], out, max_sentences=3, threads=2)
    assert out.read_text() == "First line .\nSecond line .\nThird line .\n"
    assert stats["undecodable_lines"] == 0 and stats["sources"] == [str(first), str(second)]


# -- coverage and the statistics table -----------------------------------------------------------
def test_coverage_shares_of_types_most_frequent_types_and_tokens():
    counts = [("<unk>", 50), ("the", 10), ("cat", 5), ("zzz", 3), ("dog", 2), ("qq", 1)]
    report = coverage({"the", "cat", "dog", "<unk>"}, counts, size=3)
    assert report == {
        "target_types": 5,
        "with_vector": 3,
        "without_vector_share": 0.4,
        "most_frequent_types": 3,
        "most_frequent_without_vector_share": round(1 / 3, 6),
        "tokens_without_vector_share": round(4 / 21, 6),
        "most_frequent_without_vector": [["zzz", 3], ["qq", 1]],
    }


def test_statistics_rows_of_coverage_and_monolingual_corpus():
    report = coverage({"a"}, [("a", 3), ("b", 1)], size=1)
    rows = quantities("coverage", "fr-en", report, "results/data/iwslt16/fr-en/emb/fasttext.vec.coverage.json")
    assert rows == {
        "target types without a fasttext vector (share)": 0.5,
        "1 most frequent target types without a fasttext vector (share)": 0.0,
        "training target tokens without a fasttext vector (share)": 0.25,
    }
    mono = quantities("monolingual", "en", {"sentences": 2, "tokens_en": 7, "types_en": 5, "undecodable_lines": 1}, "x")
    assert mono == {"sentences": 2, "tokens": 7, "types": 5, "lines with undecodable bytes": 1}


# -- the configuration ---------------------------------------------------------------------------
def test_use_naming_an_undefined_corpus_is_an_error_naming_the_key():
    config = {
        "monolingual": {
            "en": {"use": "wmt17", "max_sentences": None, "corpora": {"wmt16": ["a.gz"], "news2015": ["b.gz"]}}
        }
    }
    with pytest.raises(
        ValueError, match=r"monolingual\.en\.use: 'wmt17' is not one of monolingual\.en\.corpora \(wmt16, news2015\)"
    ):
        monolingual_sources(config, "en")
    with pytest.raises(ValueError, match=r"monolingual: no corpus configured for 'de'"):
        monolingual_sources(config, "de")
    config["monolingual"]["en"]["use"] = "news2015"
    assert monolingual_sources(config, "en") == ["b.gz"]


@pytest.mark.parametrize("name", ["config.yaml", "config.demo.yaml"])
def test_every_configured_corpus_names_known_sources(name):
    config = yaml.safe_load((ROOT / name).read_text())
    for lang, m in config["monolingual"].items():
        monolingual_sources(config, lang)
        for corpus in m["corpora"].values():
            missing = [
                key for key in (spec.partition("::")[0] for spec in corpus) if key not in config.get("sources", {})
            ]
            assert not missing, f"{name}: monolingual.{lang} names sources without a `sources` entry: {missing}"
    if name == "config.yaml":
        assert {"en", "fr"} <= set(config["monolingual"])
        assert all(m["use"] == "wmt16" for m in config["monolingual"].values())  # the paper's corpus by default
