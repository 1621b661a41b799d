"""The formats as released, byte for byte: `|||` headlines, lone carriage returns and Unicode line
separators inside lines, undecodable bytes, zip archives, nested archives; one pass per archive."""

import gzip
import json
import tarfile

import pytest

from workflow_src.atomic import read_lines, stream_lines
from workflow_src.data import iwslt, wmt
from workflow_src.data.archives import CorpusError
from workflow_src.data.demo_world import deterministic_tgz, deterministic_zip

SGM = (
    '<srcset setid="t" srclang="any">\n<doc docid="d1" genre="news">\n<p>\n<seg id="1">{}</seg>\n</p>\n</doc>\n'
    "</srcset>\n"
)


def write_archive(path, members: dict[str, bytes | str]):
    path.write_bytes(
        (deterministic_zip if path.suffix == ".zip" else deterministic_tgz)(
            {name: data if isinstance(data, bytes) else data.encode() for name, data in members.items()}
        )
    )
    return str(path)


def extract_wmt(tmp_path, train: list[dict], members: dict, archive="corpus.tgz", pair="de-en"):
    """Run the WMT extraction with a one-segment dev and test set in `archive` beside `members`;
    (the training side files' lines split on "\\n" only, stats)."""
    src, tgt = pair.split("-")
    evaluation = {f"eval.{lang}.sgm": SGM.format(f"Eval {lang}.") for lang in (src, tgt)}
    path = write_archive(tmp_path / archive, {**members, **evaluation})
    sets = [{"archive": path, "source": f"eval.{src}.sgm", "target": f"eval.{tgt}.sgm"}]
    train = [{**entry, "archive": path} for entry in train]
    out = tmp_path / "out"
    wmt.main(
        [
            "--pair",
            pair,
            "--sources",
            json.dumps({"train": train, "dev": sets, "test": sets}),
            "--out-dir",
            str(out),
            "--stats",
            str(tmp_path / "stats.json"),
        ]
    )
    sides = [(out / f"train.{lang}").read_bytes().decode().split("\n") for lang in (src, tgt)]
    assert all(side[-1] == "" for side in sides)
    return [side[:-1] for side in sides], json.loads((tmp_path / "stats.json").read_text())


def headlines(source_column=2, target_column=1):
    return {
        "delimited": "wiki/fi-en/titles.fi-en",
        "delimiter": "|||",
        "source_column": source_column,
        "target_column": target_column,
    }


def test_headlines_split_on_triple_pipes_and_strip_each_field(tmp_path):
    titles = "Suomen tasavalta ||| Republic of Finland\nHelsinki|||Helsinki \nA ||| B\n"
    (en, fi), stats = extract_wmt(tmp_path, [headlines()], {"wiki/fi-en/titles.fi-en": titles}, pair="en-fi")
    assert en == ["Republic of Finland", "Helsinki", "B"] and fi == ["Suomen tasavalta", "Helsinki", "A"]
    assert stats["splits"]["train"] == {"segments": 3, "from": [f"{tmp_path / 'corpus.tgz'}:wiki/fi-en/titles.fi-en"]}


def test_a_line_without_the_delimiter_names_the_member_and_line(tmp_path):
    with pytest.raises(
        CorpusError,
        match=r"corpus\.tgz:wiki/fi-en/titles\.fi-en, line 2: expected 2 fields "
        r"separated by '\|\|\|', found 1",
    ):
        extract_wmt(tmp_path, [headlines()], {"wiki/fi-en/titles.fi-en": "a ||| b\nSuomi\tFinland\n"}, pair="en-fi")


def test_a_lone_carriage_return_on_one_side_keeps_the_sides_in_step(tmp_path):
    """News Commentary (TFDS #2474): universal newlines would read 4 German lines against 3."""
    de = b"Erste Zeile.\nZweite\rZeile.\nDritte Zeile.\n"
    assert len(de.decode().splitlines()) == 4
    members = {"nc.de-en.de": de, "nc.de-en.en": b"First line.\nSecond line.\nThird line.\n"}
    (de_lines, en_lines), stats = extract_wmt(tmp_path, [{"source": "nc.de-en.de", "target": "nc.de-en.en"}], members)
    assert de_lines == ["Erste Zeile.", "Zweite Zeile.", "Dritte Zeile."]  # the "\r" read as a space
    assert en_lines == ["First line.", "Second line.", "Third line."]
    assert stats["splits"]["train"]["segments"] == 3


def test_unicode_line_separators_and_form_feeds_stay_inside_their_lines(tmp_path):
    de = "eins\x85zwei\nLinie\u2028Trenner\nSeite\x0cVorschub\nAbsatz\u2029Trenner\n"
    assert len(de.splitlines()) == 8
    members = {"c.de": de, "c.en": "one\ntwo\nthree\nfour\n"}
    (de_lines, en_lines), _ = extract_wmt(tmp_path, [{"source": "c.de", "target": "c.en"}], members)
    assert de_lines == de.split("\n")[:-1] and len(en_lines) == 4
    # and the pipeline's own readers keep them too, plain or gzipped
    out = tmp_path / "out" / "train.de"
    packed = tmp_path / "train.de.gz"
    packed.write_bytes(gzip.compress(out.read_bytes()))
    assert read_lines(out) == list(stream_lines(out)) == list(stream_lines(packed)) == de_lines
    crlf = tmp_path / "cr.txt"
    crlf.write_bytes(b"a\rb\nc\n")
    assert read_lines(crlf) == ["a\rb", "c"]


def test_undecodable_bytes_are_replaced_counted_and_the_first_is_named(tmp_path):
    members = {"c.de": b"gut\ncaf\xe9\nok\n\xff\xfe\n", "c.en": b"good\ncafe\nok\nbad\n"}
    (de, _), stats = extract_wmt(tmp_path, [{"source": "c.de", "target": "c.en"}], members)
    assert de == ["gut", "caf\ufffd", "ok", "\ufffd\ufffd"]
    assert stats["undecodable_lines"] == 2 and stats["policy"] == "replace"
    assert stats["first_undecodable"] == f"{tmp_path / 'corpus.tgz'}:c.de, line 2"


def test_undecodable_bytes_in_iwslt_files_are_counted(tmp_path):
    xml = '<mteval><doc docid="1"><seg id="1">{}</seg></doc></mteval>'
    archive = write_archive(
        tmp_path / "fr-en.tgz",
        {
            "fr-en/train.tags.fr-en.fr": b"<url>u</url>\nd\xe9j\xe0\n",
            "fr-en/train.tags.fr-en.en": b"<url>u</url>\nalready\n",
            "fr-en/IWSLT16.TED.tst2013.fr-en.fr.xml": xml.format("a").encode(),
            "fr-en/IWSLT16.TED.tst2013.fr-en.en.xml": xml.format("a\xff").encode("latin-1"),
        },
    )
    out = tmp_path / "out"
    iwslt.main(
        [
            "--pair",
            "fr-en",
            "--archives",
            archive,
            "--dev-sets",
            "tst2013",
            "--test-sets",
            "tst2013",
            "--out-dir",
            str(out),
            "--stats",
            str(tmp_path / "stats.json"),
        ]
    )
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["undecodable_lines"] == 3  # train.tags once, the reference once for dev and once for test
    assert stats["first_undecodable"] == f"{archive}:fr-en/train.tags.fr-en.fr, line 2"
    assert read_lines(out / "train.fr") == ["d\ufffdj\ufffd"] and read_lines(out / "dev.en") == ["a\ufffd"]


def iwslt_members(pair="fr-en"):
    src, tgt = pair.split("-")
    xml = '<mteval><doc docid="1"><seg id="1">{}</seg><seg id="2">{}</seg></doc></mteval>'
    return {
        **{f"{pair}/train.tags.{pair}.{lang}": f"<talkid>1</talkid>\nTrain {lang}.\n" for lang in (src, tgt)},
        **{
            f"{pair}/IWSLT16.TED.tst2013.{pair}.{lang}.xml": xml.format(f"One {lang}.", f"Two {lang}.")
            for lang in (src, tgt)
        },
    }


@pytest.mark.parametrize(
    "outer, inner",
    [
        ("bundle.zip", None),
        ("bundle.tgz", "2016-01/texts/fr/en/fr-en.zip"),
        ("bundle.zip", "2016-01/texts/fr/en/fr-en.tgz"),
    ],
)
def test_zip_archives_are_read_wherever_tar_archives_are(tmp_path, outer, inner):
    members = iwslt_members()
    if inner:
        packed = (deterministic_zip if inner.endswith(".zip") else deterministic_tgz)(members)
        members = {inner: packed, "2016-01/README": "other members"}
    spec = write_archive(tmp_path / outer, members) + (f"::{inner}" if inner else "")
    out = tmp_path / "out"
    iwslt.main(
        [
            "--pair",
            "fr-en",
            "--archives",
            spec,
            "--dev-sets",
            "tst2013",
            "--test-sets",
            "tst2013",
            "--out-dir",
            str(out),
            "--stats",
            str(tmp_path / "stats.json"),
        ]
    )
    assert read_lines(out / "train.fr") == ["Train fr."] and read_lines(out / "test.en") == ["One en.", "Two en."]
    assert (
        json.loads((tmp_path / "stats.json").read_text())["splits"]["train"]["from"][0]
        == f"{spec}:fr-en/train.tags.fr-en.fr"
    )


def test_wmt_zip_archives_and_one_pass_per_archive(tmp_path, monkeypatch):
    opened = []
    real_open = tarfile.open

    def counting_open(name=None, mode="r", fileobj=None, **kwargs):
        if mode.startswith("r"):  # reading, not the archive being written
            opened.append(str(name))
        return real_open(name, mode, fileobj, **kwargs)

    monkeypatch.setattr(tarfile, "open", counting_open)
    train = [{"source": "a.de", "target": "a.en"}, {"source": "b.de", "target": "b.en"}]
    members = {"a.de": "A.\n", "a.en": "A!\n", "b.de": "B.\n", "b.en": "B!\n", "unused": "x\n" * 1000}
    (de, en), stats = extract_wmt(tmp_path, train, members)  # training, dev and test: 8 members of one archive
    assert (de, en) == (["A.", "B."], ["A!", "B!"]) and opened == [str(tmp_path / "corpus.tgz")]
    (de, en), _ = extract_wmt(tmp_path, train, members, archive="corpus.zip")
    assert (de, en) == (["A.", "B."], ["A!", "B!"]) and len(opened) == 1
    assert stats["splits"]["dev"] == {
        "segments": 1,
        "from": [f"{tmp_path / 'corpus.tgz'}:eval.de.sgm", f"{tmp_path / 'corpus.tgz'}:eval.en.sgm"],
    }


def test_wmt_entries_of_the_old_shape_are_refused(tmp_path):
    with pytest.raises(CorpusError, match=r"needs 'source' and 'target' members, or a 'delimited' member"):
        extract_wmt(tmp_path, [{"tsv": "t.fi-en", "source_column": 2, "target_column": 1}], {"t.fi-en": "a\tb\n"})
