if "demo" in config:

    rule demo_world:
        """The embedded demo's synthetic corpora, written as local mirrors of the real sources."""
        output:
            demo_mirror_files(),
        params:
            # functions: a string param is formatted with wildcards, and these hold {src} and {tgt}
            iwslt=lambda w: f"--iwslt {shlex.quote(json.dumps(demo_iwslt()))}" if demo_iwslt() else "",
            sizes=" ".join(f"--{k.replace('_', '-')} {config['demo'][k]}"
                           for k in ("seed", "train_sentences", "test_set_sentences", "monolingual_sentences")),
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
            "python -m workflow_src.data.demo_world {params.iwslt} "
            "--monolingual {params.mono} --wmt {params.wmt:q} --lm {params.lm:q} {params.lm_size} "
            "{params.sizes} {params.world} > {log:q} 2>&1"
