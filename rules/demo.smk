if "demo" in config:

    def demo_mirror_files():
        """Every file the demo world writes, at the paths the configured sources name."""
        from workflow_src.demo_world import directions

        d = config["datasets"]["iwslt16"]
        root = mirror_base(d["mirror"]).removeprefix("file://")
        files = [f"{root}/{t.format(src=s, tgt=g)}" for s, g in directions(d["pairs"])
                 for t in (d["train_archive"], d["test_archive"])]
        files += sorted({e["archive"] for d in demo_wmt().values() for splits in d["sources"].values()
                         for entries in splits.values() for e in entries})
        files += [f"{mirror_base(m['mirror']).removeprefix('file://')}/{m['path']}" for m in config["monolingual"].values()]
        return files + [corpus["archive"] for corpus in demo_lm().values()]

    def demo_wmt():
        """{data set: {sources: {pair: {split: [member entries with local archive paths]}}, train_sentences}}
        of the WMT data sets; a data set's training sentences are `demo.wmt_train_sentences[name]`,
        else `demo.train_sentences`."""
        sizes = config["demo"].get("wmt_train_sentences", {})
        return {name: {"train_sentences": sizes.get(name, config["demo"]["train_sentences"]),
                       "sources": {p: {split: [{**e, "archive": f"{mirror_base(e['mirror']).removeprefix('file://')}/{e['archive']}"}
                                               for e in entries] for split, entries in splits.items()}
                                   for p, splits in d["sources"].items()}}
                for name, d in config["datasets"].items() if d["kind"] == "wmt"}

    def demo_lm():
        """{name: {format, archive (local path), members}} of the language-modelling data sets;
        the format (ptb or wikitext) by the data set's name."""
        return {name: {"format": "wikitext" if name.startswith("wikitext") else "ptb",
                       "archive": f"{mirror_base(d['mirror']).removeprefix('file://')}/{d['archive']}",
                       "members": d["members"]}
                for name, d in config["datasets"].items() if d["kind"] == "lm"}

    rule demo_world:
        """The embedded demo's synthetic corpora, written as local mirrors of the real sources."""
        output:
            demo_mirror_files(),
        params:
            iwslt_root=mirror_base(config["datasets"]["iwslt16"]["mirror"]).removeprefix("file://"),
            d={k: config["datasets"]["iwslt16"][k] for k in ("train_archive", "test_archive", "pairs", "dev_sets", "test_sets")},
            world=" ".join(f"--{k.replace('_', '-')} {v}" for k, v in config["demo"]["world"].items()),
            wmt=json.dumps(demo_wmt()),
            lm=json.dumps(demo_lm()),
            lm_size=" ".join(f"--{k.replace('_', '-')} {v}" for k, v in config["demo"].items() if k.startswith("lm_")),
            mono=" ".join(f"{lang}:{mirror_base(m['mirror']).removeprefix('file://')}/{m['path']}"
                          for lang, m in config["monolingual"].items()),
        log:
            "logs/demo/world.log",
        conda:
            "../envs/text.yaml"
        shell:
            "{PY}.demo_world --iwslt-root {params.iwslt_root:q} "
            "--train-archive {params.d[train_archive]:q} --test-archive {params.d[test_archive]:q} "
            "--pairs {params.d[pairs]} --dev-sets {params.d[dev_sets]} --test-sets {params.d[test_sets]} "
            "--monolingual {params.mono} --wmt {params.wmt:q} --lm {params.lm:q} {params.lm_size} "
            "--seed {config[demo][seed]} "
            "--train-sentences {config[demo][train_sentences]} "
            "--test-set-sentences {config[demo][test_set_sentences]} "
            "--monolingual-sentences {config[demo][monolingual_sentences]} {params.world} > {log:q} 2>&1"
