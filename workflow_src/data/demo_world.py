"""The embedded demo's mirror of the real releases: what the synthetic world (`demo_language.py`)
says, written in the layouts of IWSLT (WIT3), WMT, News Crawl, PTB and WikiText-2.

`python -m workflow_src.data.demo_world` writes the world's corpora as local mirrors in the real
IWSLT, WMT and News Crawl layouts, and its English as the language-modelling corpora PTB and
WikiText-2 in theirs (see `write_mirror`). The readers of these layouts are tested on samples of
the real releases too (tests/test_real_data.py, tests/test_formats.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import io
import json
import random
import re
import tarfile
import zipfile
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from workflow_src.atomic import atomic_output, described
from workflow_src.data.demo_language import World, WorldSize

# -- the IWSLT and News Crawl layouts ----------------------------------------------------------
TALK_LENGTH = 60  # segments per synthetic talk


def _talks(n_sentences: int, first_talk_id: int) -> list[tuple[int, range]]:
    talks = []
    for start in range(0, n_sentences, TALK_LENGTH):
        talks.append((first_talk_id + len(talks), range(start, min(start + TALK_LENGTH, n_sentences))))
    return talks


def talk_header(talk_id: int, lang: str) -> list[str]:
    """The metadata lines before a talk's text, in the real files' order."""
    return [
        f"<url>http://www.ted.com/talks/demo_talk_{talk_id}</url>",
        "<keywords>talks, demo, synthetic</keywords>",
        f"<speaker>Demo Speaker {talk_id}</speaker>",
        f"<talkid>{talk_id}</talkid>",
        f"<title>Demo talk {talk_id} ({lang})</title>",
        f"<description>TED Talk Subtitles and Transcript: synthetic talk {talk_id}.</description>",
    ]


def train_tags(sentences: list[str], talks: list[tuple[int, range]], lang: str) -> str:
    """A `train.tags.<pair>.<lang>` file: metadata lines before each talk's text."""
    lines = []
    for talk_id, span in talks:
        lines += talk_header(talk_id, lang)
        lines += [sentences[i] for i in span]
    return "\n".join(lines) + "\n"


LANGUAGE_NAMES = {"de": "german", "en": "english", "fi": "finnish", "fr": "french"}  # srclang, as WIT3 writes it


def mteval_xml(sentences: list[str], talks: list[tuple[int, range]], setid: str, lang: str) -> str:
    """An `IWSLT1[67].TED.<set>.<pair>.<lang>.xml` file as the real ones: under `<srcset>`, one
    `<doc docid genre>` a talk holding its metadata, `<seg id="N"> text</seg>` lines, then
    `<reviewer>` and `<translator>`."""
    srclang = LANGUAGE_NAMES.get(lang, lang)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<mteval>",
        f"<srcset setid={quoteattr(setid)} srclang={quoteattr(srclang)}>",
    ]
    for talk_id, span in talks:
        out.append(f'<doc docid="{talk_id}" genre="lectures">')
        out += talk_header(talk_id, lang)
        out += [f'<seg id="{seg_id}"> {escape(sentences[i])}</seg>' for seg_id, i in enumerate(span, start=1)]
        out += ["<reviewer></reviewer>", "<translator></translator>", "</doc>"]
    out += ["</srcset>", "</mteval>"]
    return "\n".join(out) + "\n"


def wmt_sgm(sentences: list[str], setid: str, lang: str, reference: bool) -> str:
    """A WMT `.sgm` file: one `<seg id>` a line inside `<doc docid>` (not XML-escaped, like the real ones)."""
    kind = "refset" if reference else "srcset"
    out = [f'<{kind} setid="{setid}" srclang="any" trglang="{lang}">']
    for doc, start in enumerate(range(0, len(sentences), TALK_LENGTH), start=1):
        out += [
            f'<doc sysid="{"ref" if reference else "src"}" docid="demo-news-{doc}" genre="news" origlang="xx">',
            "<p>",
        ]
        out += [f'<seg id="{i + 1}">{s}</seg>' for i, s in enumerate(sentences[start : start + TALK_LENGTH])]
        out += ["</p>", "</doc>"]
    return "\n".join(out + [f"</{kind}>"]) + "\n"


def write_wmt_mirror(world: "World", sources: dict[str, dict], n_train: int, n_per_set: int) -> list[Path]:
    """The WMT archives of one data set at the configured paths (`wmt_members`)."""
    members: dict[str, dict[str, str]] = {}
    wmt_members(world, sources, n_train, n_per_set, members)
    return write_archives(members)


def with_lone_carriage_return(sentence: str) -> str:
    """The sentence with its first space a lone "\\r", as News Commentary has inside some lines (TFDS
    #2474, PR #2633); read as a space, it leaves the sentence as it was."""
    return sentence.replace(" ", "\r", 1)


LONE_CR_CORPUS = "news-commentary"  # members whose name holds this get one line with a lone "\r"


def wmt_members(
    world: "World",
    sources: dict[str, dict],
    n_train: int,
    n_per_set: int,
    members: dict[str, dict[str, str]],
    dataset: str = "",
) -> None:
    """Add one WMT data set's archive members to `members` (archive -> member -> text). `sources`
    maps each pair to its train/dev/test lists of {archive, source, target} (or, for training,
    {archive, delimited, delimiter, source_column, target_column}: the wiki headlines, written as
    the real `Finnish ||| English` lines, the delimiter with one space each side). The training
    sentences are shared out among a pair's corpora; in a News Commentary source member the
    middle line holds a lone "\\r" (`with_lone_carriage_return`). Each dev/test entry is one set
    of sgm files. Members already there (the two directions of one corpus, or a corpus another
    data set names too) are kept, and an archive holds every member any pair names."""
    for pair, spec in sorted(sources.items()):
        src, tgt = pair.split("-")
        corpora = spec["train"]
        for i, entry in enumerate(corpora):
            files = members.setdefault(entry["archive"], {})
            names = [entry["delimited"]] if "delimited" in entry else [entry["source"], entry["target"]]
            if all(name in files for name in names):
                continue
            count = n_train // len(corpora) + (1 if i < n_train % len(corpora) else 0)
            sentences = world.parallel([src, tgt], count, f"wmt-{entry['archive']}-{'-'.join(sorted(names))}")
            if "delimited" in entry:
                order = sorted(((entry["source_column"], src), (entry["target_column"], tgt)))
                separator = f" {entry['delimiter']} "
                files[entry["delimited"]] = "".join(
                    separator.join(s[lang] for _, lang in order) + "\n" for s in sentences
                )
                continue
            source_side = [s[src] for s in sentences]
            if LONE_CR_CORPUS in entry["source"] and source_side:
                source_side[len(source_side) // 2] = with_lone_carriage_return(source_side[len(source_side) // 2])
            files[entry["source"]] = "".join(line + "\n" for line in source_side)
            files[entry["target"]] = "".join(s[tgt] + "\n" for s in sentences)
        for split in ("dev", "test"):
            for i, entry in enumerate(spec[split]):
                archive, source, target = entry["archive"], entry["source"], entry["target"]
                sentences = world.parallel([src, tgt], n_per_set, f"wmt-{dataset}-{pair}-{split}-{i}")
                setid = Path(source).name.split("-")[0]
                members.setdefault(archive, {})[source] = wmt_sgm(
                    [s[src] for s in sentences], setid, src, reference=False
                )
                members[archive][target] = wmt_sgm([s[tgt] for s in sentences], setid, tgt, reference=True)


def write_archives(members: dict[str, dict[str, str]]) -> list[Path]:
    written = []
    for archive, content in sorted(members.items()):
        write_bytes(Path(archive), (deterministic_zip if archive.endswith(".zip") else deterministic_tgz)(content))
        written.append(Path(archive))
    return written


def as_bytes(data: str | bytes) -> bytes:
    return data if isinstance(data, bytes) else data.encode("utf-8")


def deterministic_tgz(members: dict[str, str | bytes]) -> bytes:
    """A .tgz whose bytes depend only on its members (text or bytes; fixed mtimes, owners, order)."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(members):
                data = as_bytes(members[name])
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def deterministic_zip(members: dict[str, str | bytes]) -> bytes:
    """A .zip whose bytes depend only on its members (text or bytes; fixed timestamps and permissions, sorted)."""
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
            z.writestr(info, as_bytes(members[name]))
    return raw.getvalue()


def write_bytes(path: Path, data: bytes) -> None:
    with atomic_output(path) as tmp:
        tmp.write_bytes(data)


# -- the language-modelling corpora (PTB, WikiText-2) ------------------------------------------
LM_SPLITS = ("train", "valid", "test")
UNK = "<unk>"
TOKEN = re.compile(r"\d+(?:[.,]\d+)*|\w+(?:-\w+)*|[^\w\s]")  # a number, a (hyphenated) word, a symbol


@dataclasses.dataclass(frozen=True)
class LMSize:
    """How much text each language-modelling corpus holds."""

    train_sentences: int = 6000
    heldout_sentences: int = 600  # each of valid and test
    vocabulary: int = 1000  # with <unk> and the end of sentence, as the papers count it


def ptb_tokens(sentence: str) -> list[str]:
    """Mikolov's PTB: lowercased, punctuation dropped, every number `N`."""
    return ["N" if t[0].isdigit() else t.lower() for t in TOKEN.findall(sentence) if t[0].isalnum()]


def wikitext_tokens(sentence: str) -> list[str]:
    """WikiText: case kept, punctuation a token of its own, `@-@`, `@,@` and `@.@` inside words
    and numbers (`3 @.@ 1`)."""
    return [part for t in TOKEN.findall(sentence) for part in re.sub(r"(?<=\w)([-.,])(?=\w)", r" @\1@ ", t).split()]


def closed_vocabulary(splits: dict[str, list[list[str]]], size: int) -> dict[str, list[list[str]]]:
    """Every split with the words outside the `size - 2` most frequent training words (ties in
    alphabetical order) as `<unk>`: a vocabulary of `size` as the papers count it (with `<unk>`
    and the end of sentence), and held-out splits with no word that training lacks, as in the
    real corpora."""
    counts = Counter(w for line in splits["train"] for w in line)
    kept = {w for w, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[: size - 2]}
    out = {split: [[w if w in kept else UNK for w in line] for line in lines] for split, lines in splits.items()}
    if len(kept) == len(counts) and any(UNK in line for lines in out.values() for line in lines):
        raise ValueError(
            f"a vocabulary of {size} holds all {len(counts)} training words, so training has no {UNK} "
            "for the held-out words it lacks: choose a smaller one"
        )
    return out


def ptb_lines(world: "World", sentences: list[str], rng: random.Random) -> list[list[str]]:
    """PTB's lines: one sentence a line."""
    return [ptb_tokens(s) for s in sentences]


def wikitext_lines(world: "World", sentences: list[str], rng: random.Random) -> list[list[str]]:
    """WikiText's lines ([] a blank one): articles under a ` = Title = ` heading (one or two
    names), sections under ` = = Heading = = ` (a noun), paragraphs of 2-6 sentences one a line,
    a blank line around every heading and two before an article's title."""
    paragraphs, start = [], 0
    while start < len(sentences):
        n = rng.randint(2, 6)
        paragraphs.append([t for s in sentences[start : start + n] for t in wikitext_tokens(s)])
        start += n
    lines: list[list[str]] = []
    while paragraphs:
        title = rng.choices(world.names, cum_weights=world.name_weights, k=rng.randint(1, 2))
        lines += [[], ["=", *title, "="], []]
        for section in range(rng.randint(1, 4)):
            if not paragraphs:
                break
            if section:
                heading = world.lexicons["en"].nouns[world.nouns.draw(rng, None)[0]][0].capitalize()
                lines += [["=", "=", heading, "=", "="], []]
            n = rng.randint(1, 3)
            lines += paragraphs[:n] + [[]]
            del paragraphs[:n]
    return lines


def lm_text(lines: list[list[str]]) -> str:
    """The file: every line with a leading and a trailing space (a blank one a single space)."""
    return "".join(f" {' '.join(line)} \n" if line else " \n" for line in lines)


# format: (its lines from the sentences, the prefix of the member names in the real archive)
LM_FORMATS = {"ptb": (ptb_lines, "./"), "wikitext": (wikitext_lines, "")}


def write_lm_mirror(world: "World", corpora: dict[str, dict], size: LMSize) -> list[Path]:
    """Each corpus of `corpora` ({name: {format, archive, members: {train, valid, test}}}, format
    `ptb` (simple-examples.tgz) or `wikitext` (wikitext-2-v1.zip)) as its real archive, a .zip or
    a .tgz by the archive's name: the world's English, a stream of its own per corpus and split,
    `size.train_sentences` for train and `size.heldout_sentences` for valid and test, with a
    closed vocabulary of `size.vocabulary` types (`closed_vocabulary`)."""
    written = []
    for name, spec in sorted(corpora.items()):
        if spec["format"] not in LM_FORMATS:
            raise ValueError(f"{name}: unknown format {spec['format']!r} (known: {', '.join(LM_FORMATS)})")
        lines_of, prefix = LM_FORMATS[spec["format"]]
        splits = {}
        for split in LM_SPLITS:
            n = size.train_sentences if split == "train" else size.heldout_sentences
            sentences = [s["en"] for s in world.parallel(["en"], n, f"lm-{name}-{split}")]
            splits[split] = lines_of(world, sentences, random.Random(f"{world.seed}-lm-{name}-{split}-layout"))
        members = {
            prefix + spec["members"][split].removeprefix("./"): lm_text(lines)
            for split, lines in closed_vocabulary(splits, size.vocabulary).items()
        }
        archive = Path(spec["archive"])
        write_bytes(archive, (deterministic_zip if archive.suffix == ".zip" else deterministic_tgz)(members))
        written.append(archive)
    return written


def directions(pairs: list[str]) -> list[tuple[str, str]]:
    """Both directions of every configured pair: the real release has an archive for each."""
    return sorted({d for p in pairs for a, b in [p.split("-")] for d in ((a, b), (b, a))})


# The real IWSLT releases, and which evaluation sets each holds (with both sides unless said):
# the 2016-01 bundle (`2016-01.tgz`, nesting `2016-01/texts/<s>/<t>/<s>-<t>.tgz`) dev2010 and
# tst2010-tst2014; `2017-01-trnted/texts/<s>/<t>/<s>-<t>.tgz` tst2015 (and its own train.tags);
# `2017-01-ted-test/texts/<s>/<t>/<s>-<t>.tgz` tst2016, the source side only, with a README.
RELEASE_PREFIX = {"bundle": "IWSLT16", "trnted": "IWSLT17", "ted_test": "IWSLT17"}
TED_TEST_README = (
    "IWSLT 2017 evaluation campaign: test sets for the MT Talk task (synthetic demo copy)\n\n"
    "For each pair x-y of languages, the xml files IWSLT17.TED.<set>.x-y.x.xml hold the source to "
    "translate.\n"
)


def release_of(set_name: str) -> str:
    """The release holding an evaluation set: `bundle`, `trnted` or `ted_test`."""
    year = re.fullmatch(r"(?:dev|tst)(\d{4})", set_name)
    if set_name == "dev2010" or (year and set_name.startswith("tst") and 2010 <= int(year.group(1)) <= 2014):
        return "bundle"
    if set_name in ("tst2015", "tst2016"):
        return "trnted" if set_name == "tst2015" else "ted_test"
    raise ValueError(f"evaluation set {set_name!r}: the releases hold dev2010 and tst2010-tst2016")


def iwslt_mirror_paths(iwslt: dict) -> list[Path]:
    """Every file `write_iwslt_mirror` writes for `iwslt` (see there)."""
    per_direction = [
        Path(iwslt[r].format(src=s, tgt=t)) for s, t in directions(iwslt["pairs"]) for r in ("trnted", "ted_test")
    ]
    return [Path(iwslt["bundle"]), *per_direction]


def write_iwslt_mirror(world: "World", iwslt: dict, n_train: int, n_per_test_set: int) -> list[Path]:
    """The IWSLT releases for both directions of each of `iwslt["pairs"]`, as the real ones:

    - the bundle `iwslt["bundle"]` nesting, at `iwslt["bundle_member"]` ({src}, {tgt}), an archive
      with `<s>-<t>/train.tags.<s>-<t>.{s,t}` and the sets up to tst2014 (`IWSLT16.TED.<set>...`);
    - `iwslt["trnted"]` with its own train.tags (the same text) and tst2015 (`IWSLT17.`);
    - `iwslt["ted_test"]` with tst2016's source side only and a README.

    The evaluation sets are `iwslt["dev_sets"] + iwslt["test_sets"]`; a set's sentences and talks
    are shared by the two directions."""
    sets = iwslt["dev_sets"] + iwslt["test_sets"]
    releases = {name: release_of(name) for name in sets}
    bundle: dict[str, bytes] = {}
    written = []
    for a, b in sorted({tuple(sorted(d)) for d in directions(iwslt["pairs"])}):
        train = world.parallel([a, b], n_train, f"train-{a}-{b}")
        train_talks = _talks(n_train, first_talk_id=1)
        evaluation = {name: world.parallel([a, b], n_per_test_set, f"{name}-{a}-{b}") for name in sets}
        for src, tgt in ((a, b), (b, a)):
            pair = f"{src}-{tgt}"
            tags = {
                f"{pair}/train.tags.{pair}.{lang}": train_tags([s[lang] for s in train], train_talks, lang)
                for lang in (src, tgt)
            }
            content = {"bundle": dict(tags), "trnted": dict(tags), "ted_test": {f"{pair}/README": TED_TEST_README}}
            for k, name in enumerate(sets):
                release, prefix = releases[name], RELEASE_PREFIX[releases[name]]
                talks = _talks(n_per_test_set, 10000 + 100 * k)
                for lang in (src,) if release == "ted_test" else (src, tgt):
                    setid = f"iwslt20{prefix[-2:]}-{name}"  # iwslt2017-tst2016, as the real file has
                    content[release][f"{pair}/{prefix}.TED.{name}.{pair}.{lang}.xml"] = mteval_xml(
                        [s[lang] for s in evaluation[name]], talks, setid, lang
                    )
            bundle[iwslt["bundle_member"].format(src=src, tgt=tgt)] = deterministic_tgz(content["bundle"])
            for release in ("trnted", "ted_test"):
                path = Path(iwslt[release].format(src=src, tgt=tgt))
                write_bytes(path, deterministic_tgz(content[release]))
                written.append(path)
    write_bytes(Path(iwslt["bundle"]), deterministic_tgz(bundle))
    return [Path(iwslt["bundle"]), *written]


def write_mirror(
    iwslt: dict | None,
    monolingual: dict[str, Path],
    size: WorldSize,
    seed: int,
    n_train: int,
    n_per_test_set: int,
    n_monolingual: int,
    wmt: dict[str, dict] | None = None,
    lm: dict[str, dict] | None = None,
    lm_size: LMSize = LMSize(),
) -> list[Path]:
    """Write the world as local mirrors of the real sources, at the configured paths:

    - the IWSLT releases of `iwslt` ({pairs, dev_sets, test_sets, bundle, bundle_member, trnted,
      ted_test}: `write_iwslt_mirror`);
    - for each data set in `wmt` ({name: {"sources": {pair: ...}, "train_sentences": n}}), its
      WMT archives (`wmt_members`; `n_train` unless it names its own number);
    - for each language in `monolingual`, a gzipped text file, one sentence a line (News Crawl);
    - for each corpus in `lm`, its language-modelling archive (`write_lm_mirror`).
    """
    wmt = wmt or {}
    iwslt_pairs = iwslt["pairs"] if iwslt else []
    wmt_pairs = [pair for d in wmt.values() for pair in d["sources"]]
    languages = sorted(
        {lang for pair in [*iwslt_pairs, *wmt_pairs] for lang in pair.split("-")}
        | set(monolingual)
        | ({"en"} if lm else set())
    )
    world = World(languages, size, seed)
    written = write_iwslt_mirror(world, iwslt, n_train, n_per_test_set) if iwslt else []
    members: dict[str, dict[str, str]] = {}
    for dataset, d in sorted(wmt.items()):
        wmt_members(world, d["sources"], d.get("train_sentences", n_train), n_per_test_set, members, dataset)
    written += write_archives(members)
    for lang, path in sorted(monolingual.items()):
        sentences = world.parallel([lang], n_monolingual, f"monolingual-{lang}")
        raw = io.BytesIO()
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write("".join(s[lang] + "\n" for s in sentences).encode("utf-8"))
        write_bytes(path, raw.getvalue())
        written.append(path)
    written += write_lm_mirror(world, lm or {}, lm_size)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument(
        "--iwslt",
        type=json.loads,
        default=None,
        help='{"pairs": [...], "dev_sets": [...], "test_sets": [...], "bundle": PATH of 2016-01.tgz, '
        '"bundle_member": "2016-01/texts/{src}/{tgt}/{src}-{tgt}.tgz", "trnted": PATH template, '
        '"ted_test": PATH template} (templates with {src} and {tgt})',
    )
    parser.add_argument("--monolingual", nargs="*", default=[], metavar="LANG:PATH")
    parser.add_argument(
        "--wmt",
        type=json.loads,
        default={},
        help='{"wmt16": {"train_sentences": N (optional), "sources": {"de-en": {"train": '
        '[{"archive", "source", "target"}, ...], "dev": [...], "test": [...]}}}}',
    )
    parser.add_argument(
        "--lm",
        type=json.loads,
        default={},
        help='{"ptb": {"format": "ptb" | "wikitext", "archive": PATH, '
        '"members": {"train": ..., "valid": ..., "test": ...}}, ...}',
    )
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--train-sentences", type=int, required=True)
    parser.add_argument("--test-set-sentences", type=int, required=True)
    parser.add_argument("--monolingual-sentences", type=int, required=True)
    for field in dataclasses.fields(WorldSize):
        parser.add_argument(f"--{field.name.replace('_', '-')}", type=type(field.default), default=field.default)
    for field in dataclasses.fields(LMSize):
        parser.add_argument(
            f"--lm-{field.name.replace('_', '-')}", dest=f"lm_{field.name}", type=int, default=field.default
        )
    args = parser.parse_args(argv)
    size = WorldSize(**{f.name: getattr(args, f.name) for f in dataclasses.fields(WorldSize)})
    lm_size = LMSize(**{f.name: getattr(args, f"lm_{f.name}") for f in dataclasses.fields(LMSize)})
    monolingual = {lang: Path(path) for lang, _, path in (m.partition(":") for m in args.monolingual)}
    for path in write_mirror(
        args.iwslt,
        monolingual,
        size,
        args.seed,
        args.train_sentences,
        args.test_set_sentences,
        args.monolingual_sentences,
        args.wmt,
        args.lm,
        lm_size,
    ):
        print(path)


if __name__ == "__main__":
    main()
