from workflow_src.embeddings import monolingual_sources

if "demo" in config:

    def demo_file(key):
        """Where the demo world writes the file of a source: its one local URL."""
        urls = source_urls(key)
        if len(urls) != 1 or not is_local(urls[0]):
            raise ValueError(f"sources.{key}: a demo source has exactly one URL, a local path (found {urls})")
        return urls[0].removeprefix("file://")

    def demo_iwslt():
        """The IWSLT layout the demo world writes: the 2016-01 bundle with its nested per-direction
        archives, and the IWSLT 2017 archives (local path templates with {src} and {tgt}); None
        without an iwslt data set."""
        d = next((d for d in config["datasets"].values() if d["kind"] == "iwslt"), None)
        if d is None:
            return None
        bundle, trnted, ted_test = d["archives"][:3]
        root = config["mirrors"]["demo"].rstrip("/")
        return {"pairs": d["pairs"], "dev_sets": d["dev_sets"], "test_sets": d["test_sets"],
                "bundle": demo_file(bundle["source"]), "bundle_member": bundle["member"],
                "trnted": f"{root}/{trnted['source']}", "ted_test": f"{root}/{ted_test['source']}"}

    def demo_mirror_files():
        """Every file the demo world writes for the configured data sets and corpora."""
        from workflow_src.demo_world import iwslt_mirror_paths

        iwslt = demo_iwslt()
        files = [str(path) for path in iwslt_mirror_paths(iwslt)] if iwslt else []
        files += [e["archive"] for d in demo_wmt().values() for splits in d["sources"].values()
                  for entries in splits.values() for e in entries]
        files += [corpus["archive"] for corpus in demo_lm().values()]
        files += [demo_file(key) for lang in config["monolingual"] for key in monolingual_sources(config, lang)]
        return sorted(set(files))

    def demo_wmt():
        """{data set: {sources: {pair: {split: [member entries with local archive paths]}}, train_sentences}}
        of the WMT data sets; a data set's training sentences are `demo.wmt_train_sentences[name]`,
        else `demo.train_sentences`."""
        sizes = config["demo"].get("wmt_train_sentences", {})
        return {name: {"train_sentences": sizes.get(name, config["demo"]["train_sentences"]),
                       "sources": {p: {split: [{**e, "archive": demo_file(e["archive"])} for e in entries]
                                       for split, entries in splits.items()}
                                   for p, splits in d["sources"].items()}}
                for name, d in config["datasets"].items() if d["kind"] == "wmt"}

    def demo_lm():
        """{name: {format, archive (local path), members}} of the language-modelling data sets;
        the format (ptb or wikitext) by the data set's name."""
        return {name: {"format": "wikitext" if name.startswith("wikitext") else "ptb",
                       "archive": demo_file(d["archive"]), "members": d["members"]}
                for name, d in config["datasets"].items() if d["kind"] == "lm"}

    rule demo_world:
        """The embedded demo's synthetic corpora, written as local mirrors of the real sources."""
        output:
            demo_mirror_files(),
        params:
            # functions: a string param is formatted with wildcards, and these hold {src} and {tgt}
            iwslt=lambda w: f"--iwslt {shlex.quote(json.dumps(demo_iwslt()))}" if demo_iwslt() else "",
            world=" ".join(f"--{k.replace('_', '-')} {v}" for k, v in config["demo"]["world"].items()),
            wmt=lambda w: json.dumps(demo_wmt()),
            lm=json.dumps(demo_lm()),
            lm_size=" ".join(f"--{k.replace('_', '-')} {v}" for k, v in config["demo"].items() if k.startswith("lm_")),
            mono=" ".join(f"{lang}:{demo_file(key)}" for lang in config["monolingual"]
                          for key in monolingual_sources(config, lang)),
        log:
            "logs/demo/world.log",
        conda:
            "../envs/text.yaml"
        shell:
            "{PY}.demo_world {params.iwslt} "
            "--monolingual {params.mono} --wmt {params.wmt:q} --lm {params.lm:q} {params.lm_size} "
            "--seed {config[demo][seed]} "
            "--train-sentences {config[demo][train_sentences]} "
            "--test-set-sentences {config[demo][test_set_sentences]} "
            "--monolingual-sentences {config[demo][monolingual_sentences]} {params.world} > {log:q} 2>&1"
