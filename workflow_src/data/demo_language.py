"""The synthetic multilingual language of the embedded demo.

Several languages express one shared meaning space. Each sentence is first drawn as a meaning
(clauses of subject, verb, object, prepositional phrase, tense, number), then realised in every
language by its own lexicon, morphology and word order. The world is built to show, at toy
scale, what the papers are about:

- a Zipfian vocabulary (nouns, verbs, adjectives and proper names drawn with p(rank r) ~ r^-s),
  so the test sets hold words seen once or never in training;
- synonyms: some concepts have several surface stems in a language, chosen per occurrence, so
  embeddings trained on monolingual text cluster them and continuous models make "meaningful"
  errors;
- morphology: inflected nouns, verbs and adjectives (stem + suffix), so BPE has something to
  split and word-level vocabularies have a long tail;
- word order: adjectives after nouns in some languages, verb-final clauses in others, so a model
  needs attention;
- proper names shared by every language, capitalised, mostly rare: copied through <unk>
  replacement.

Everything is determined by the seed. `demo_world.py` writes what this world says in the
releases' own layouts.
"""

from __future__ import annotations

import dataclasses
import itertools
import random

TENSES = ("past", "present", "future")
NUMBERS = ("sg", "pl")


@dataclasses.dataclass(frozen=True)
class WorldSize:
    nouns: int = 1200
    verbs: int = 240
    adjectives: int = 160
    names: int = 400
    prepositions: int = 8
    zipf_exponent: float = 1.05
    synonym_rate: float = 0.12
    object_rate: float = 0.7
    pp_rate: float = 0.35
    two_clause_rate: float = 0.2
    question_rate: float = 0.15
    fields: int = 16
    topical_rate: float = 0.85


@dataclasses.dataclass(frozen=True)
class LanguageStyle:
    """How one language realises a meaning."""

    consonants: str
    vowels: tuple[str, ...]
    adjective_after_noun: bool
    verb_final: bool
    gendered: bool


STYLES = {
    "en": LanguageStyle("bcdfghklmnprstvw", ("a", "e", "i", "o", "u", "ea", "oo"), False, False, False),
    "fr": LanguageStyle("bcdfjlmnprstv", ("a", "e", "i", "o", "ou", "ai", "eu"), True, False, True),
    "de": LanguageStyle("bdfghklmnprstwz", ("a", "e", "i", "o", "u", "ei", "au"), False, True, True),
    "fi": LanguageStyle("hjklmnprstv", ("a", "e", "i", "o", "u", "aa", "ii"), False, False, False),
}


def zipf_cumulative_weights(ids: list[int], exponent: float) -> list[float]:
    """Cumulative p(id) ~ (id + 1)^-exponent, for `random.choices(cum_weights=...)`."""
    return list(itertools.accumulate(1.0 / ((i + 1) ** exponent) for i in ids))


class ConceptSampler:
    """Concepts 0..n-1 with Zipfian frequencies (concept i has rank i + 1), in semantic fields
    (i mod fields). A topical draw stays inside the clause's field, so words of a field share
    contexts, and synonyms (one concept) share them exactly: what embeddings pick up."""

    def __init__(self, n: int, exponent: float, fields: int):
        self.fields = min(fields, n)
        groups = [list(range(n))] + [list(range(f, n, self.fields)) for f in range(self.fields)]
        self.groups = [(ids, zipf_cumulative_weights(ids, exponent)) for ids in groups]

    def draw(self, rng: random.Random, field: int | None, k: int = 1) -> list[int]:
        ids, weights = self.groups[0 if field is None else field % self.fields + 1]
        return rng.choices(ids, cum_weights=weights, k=k)


class Lexicon:
    """Surface forms of every concept in one language, drawn from its own random stream."""

    def __init__(self, lang: str, size: WorldSize, seed: int):
        self.lang = lang
        style = STYLES.get(lang) or STYLES["en"]
        self.style = style
        rng = random.Random(f"{seed}-lexicon-{lang}")
        used: set[str] = set()

        def syllable() -> str:
            return rng.choice(style.consonants) + rng.choice(style.vowels)

        def new_stem(min_syll: int, max_syll: int) -> str:
            while True:
                stem = "".join(syllable() for _ in range(rng.randint(min_syll, max_syll)))
                stem += rng.choice(style.consonants) if rng.random() < 0.5 else ""
                if stem not in used and len(stem) >= 3:
                    used.add(stem)
                    return stem

        def stems(count: int, lo: int, hi: int) -> list[list[str]]:
            out = []
            for _ in range(count):
                alternatives = [new_stem(lo, hi)]
                if rng.random() < size.synonym_rate:
                    alternatives.append(new_stem(lo, hi))
                out.append(alternatives)
            return out

        # Function words first, so that they take the short forms.
        self.determiners = {
            (kind, gender, number): new_stem(1, 1)
            for kind in ("def", "indef", "this")
            for gender in ((0, 1) if style.gendered else (0,))
            for number in NUMBERS
        }
        self.prepositions = [new_stem(1, 1) for _ in range(size.prepositions)]
        self.conjunction = new_stem(1, 1)
        self.question = new_stem(1, 2)
        self.future_auxiliary = None if style.gendered else new_stem(1, 1)
        self.nouns = stems(size.nouns, 1, 3)
        self.verbs = stems(size.verbs, 1, 3)
        self.adjectives = stems(size.adjectives, 1, 3)
        self.noun_gender = [rng.randint(0, 1) if style.gendered else 0 for _ in range(size.nouns)]
        suffix = lambda: rng.choice(style.vowels) + rng.choice(style.consonants)  # noqa: E731
        self.plural_suffix = suffix()
        self.adjective_plural_suffix = suffix() if style.gendered else ""
        self.verb_suffix = {(t, n): suffix() for t in TENSES for n in NUMBERS}
        if self.future_auxiliary:  # analytic future: the auxiliary carries it, the verb is bare
            self.verb_suffix[("future", "sg")] = self.verb_suffix[("future", "pl")] = ""
        self.synonym_preference = 0.7

    def pick(self, alternatives: list[str], rng: random.Random) -> str:
        if len(alternatives) == 1 or rng.random() < self.synonym_preference:
            return alternatives[0]
        return rng.choice(alternatives[1:])


@dataclasses.dataclass
class NounPhrase:
    noun: int | None  # concept id, or None for a proper name
    name: str | None
    number: str
    determiner: str
    adjectives: list[int]


@dataclasses.dataclass
class Clause:
    subject: NounPhrase
    verb: int
    tense: str
    obj: NounPhrase | None
    preposition: int | None
    prep_object: NounPhrase | None


@dataclasses.dataclass
class Meaning:
    clauses: list[Clause]
    question: bool


class World:
    """The meaning space and its realisations in several languages."""

    def __init__(self, languages: list[str], size: WorldSize, seed: int):
        self.size = size
        self.seed = seed
        self.lexicons = {lang: Lexicon(lang, size, seed) for lang in languages}
        name_rng = random.Random(f"{seed}-names")
        self.names = sorted({self._name(name_rng) for _ in range(size.names * 2)})[: size.names]
        name_rng.shuffle(self.names)
        self.nouns = ConceptSampler(size.nouns, size.zipf_exponent, size.fields)
        self.verbs = ConceptSampler(size.verbs, size.zipf_exponent, size.fields)
        self.adjectives = ConceptSampler(size.adjectives, size.zipf_exponent, size.fields)
        self.name_weights = zipf_cumulative_weights(list(range(size.names)), size.zipf_exponent)

    @staticmethod
    def _name(rng: random.Random) -> str:
        syllables = [rng.choice("bdgkmnprstz") + rng.choice("aeiou") for _ in range(rng.randint(2, 3))]
        return "".join(syllables).capitalize()

    def _field(self, rng: random.Random, topic: int) -> int | None:
        return topic if rng.random() < self.size.topical_rate else None

    def _noun_phrase(self, rng: random.Random, topic: int, allow_name: bool) -> NounPhrase:
        if allow_name and rng.random() < 0.15:
            name = rng.choices(self.names, cum_weights=self.name_weights)[0]
            return NounPhrase(None, name, "sg", "", [])
        noun = self.nouns.draw(rng, self._field(rng, topic))[0]
        n_adj = rng.choices((0, 1, 2), (0.55, 0.35, 0.10))[0]
        adjectives = self.adjectives.draw(rng, self._field(rng, topic), k=n_adj)
        return NounPhrase(noun, None, rng.choice(NUMBERS), rng.choice(("def", "indef", "this")), adjectives)

    def _clause(self, rng: random.Random) -> Clause:
        topic = rng.randrange(self.size.fields)
        with_pp = rng.random() < self.size.pp_rate
        return Clause(
            subject=self._noun_phrase(rng, topic, allow_name=True),
            verb=self.verbs.draw(rng, self._field(rng, topic))[0],
            tense=rng.choice(TENSES),
            obj=self._noun_phrase(rng, topic, allow_name=True) if rng.random() < self.size.object_rate else None,
            preposition=rng.randrange(self.size.prepositions) if with_pp else None,
            prep_object=self._noun_phrase(rng, topic, allow_name=False) if with_pp else None,
        )

    def meaning(self, rng: random.Random) -> Meaning:
        n_clauses = 2 if rng.random() < self.size.two_clause_rate else 1
        return Meaning([self._clause(rng) for _ in range(n_clauses)], rng.random() < self.size.question_rate)

    # -- realisation -------------------------------------------------------------------------
    def _realise_np(self, np: NounPhrase, lex: Lexicon, rng: random.Random) -> list[str]:
        if np.name is not None:
            return [np.name]
        gender = lex.noun_gender[np.noun]
        noun = lex.pick(lex.nouns[np.noun], rng)
        if np.number == "pl":
            noun += lex.plural_suffix
        adjectives = []
        for a in np.adjectives:
            adjective = lex.pick(lex.adjectives[a], rng)
            if np.number == "pl":
                adjective += lex.adjective_plural_suffix
            adjectives.append(adjective)
        det = lex.determiners[(np.determiner, gender if lex.style.gendered else 0, np.number)]
        if lex.style.adjective_after_noun:
            return [det, noun, *adjectives]
        return [det, *adjectives, noun]

    def _realise_clause(self, clause: Clause, lex: Lexicon, rng: random.Random) -> list[str]:
        subject = self._realise_np(clause.subject, lex, rng)
        verb = lex.pick(lex.verbs[clause.verb], rng) + lex.verb_suffix[(clause.tense, clause.subject.number)]
        verb_group = [verb]
        if clause.tense == "future" and lex.future_auxiliary:
            verb_group = [lex.future_auxiliary, verb]
        obj = self._realise_np(clause.obj, lex, rng) if clause.obj else []
        pp = []
        if clause.preposition is not None:
            pp = [lex.prepositions[clause.preposition], *self._realise_np(clause.prep_object, lex, rng)]
        if lex.style.verb_final:
            return subject + obj + pp + verb_group
        return subject + verb_group + obj + pp

    def realise(self, meaning: Meaning, lang: str, rng: random.Random) -> str:
        """The sentence in `lang`, untokenized, capitalised, with final punctuation."""
        lex = self.lexicons[lang]
        words: list[str] = []
        for i, clause in enumerate(meaning.clauses):
            if i:
                words[-1] += ","
                words.append(lex.conjunction)
            words.extend(self._realise_clause(clause, lex, rng))
        if meaning.question:
            words.insert(0, lex.question)
        words[0] = words[0][0].upper() + words[0][1:]
        return " ".join(words) + ("?" if meaning.question else ".")

    def parallel(self, languages: list[str], n: int, stream: str) -> list[dict[str, str]]:
        """n meanings, each realised in every language of `languages`."""
        rng = random.Random(f"{self.seed}-{stream}")
        out = []
        for _ in range(n):
            meaning = self.meaning(rng)
            out.append({lang: self.realise(meaning, lang, rng) for lang in languages})
        return out
