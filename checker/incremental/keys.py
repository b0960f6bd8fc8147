"""What a scan result, the tree facts and each file's analysis depend on: their cache keys."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from idxcheck.facts.algorithms import declares_algorithm_facts
from idxcheck.facts.constraints import read_registry
from idxcheck.facts.kernels import Launcher, launchers_signature
from idxcheck.facts.modes import mode_model_from_profile
from idxcheck.facts.tree import defines_any, feeds_tree_facts, mentioned_in
from idxcheck.incremental.cache import Cache
from idxcheck.model.config import Config
from idxcheck.model.stable import digest
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import SourceFile, reading
from idxcheck.source.index import DataclassIndex
from idxcheck.source.tree import LoadedTree


def tree_key(tree: LoadedTree, config: Config, profile: Profile, cache: Cache) -> str:
    """What a scan result depends on: every file read after the prefilter, the walk's errors,
    the configuration and the versions."""
    parts = [cache.versions(), config.key_settings(), profile.name]
    parts.append(str(tree.walked))
    parts.extend(
        f"{e.path}\0{e.message}" for e in sorted(tree.errors, key=lambda e: (e.path, e.message))
    )
    parts.extend(f"{s.path}\0{s.text_digest()}" for s in sorted(tree.files, key=lambda s: s.path))
    return digest(*parts)


def tree_keys(tree: LoadedTree, config: Config, profile: Profile, cache: Cache) -> tuple[str, str]:
    """Two keys from one pass over the tree (each file's dataclasses are read once):

    - what the tree facts depend on. A file that holds the mode enum, a runner, a width
      function, a backend registry or a backend constraint counts by its whole text; any other
      file only by its dataclasses (whose fields a runner may read), so that editing a
      backend's methods keeps the key. The members of the profile's fallback mode model depend
      on what every file mentions, so they count too;
    - what a file's analysis, and a runner's reading, read of the tree besides their own file,
      the classes they look up and the tree facts (`context_key`, `FileReadings`): the
      dataclasses of every file (metadata objects built by field order), the whole text of
      files that define a width function (interpreted where called, `WidthDefinitions`) or the
      speculative-algorithm enum or the list of draft backends (`AlgorithmModel`), the
      fallback mode members, the versions and settings."""
    names = set(read_registry(tree.files, profile))
    fallback = mode_model_from_profile(profile, mentioned_in(tree.files, profile))
    common = [
        cache.versions(),
        replace(config, focus=None).key_settings(),
        profile.name,
        repr(fallback.members),
    ]
    facts = ["tree-facts", *common]
    inputs = ["inputs", *common]
    for source in sorted(tree.files, key=lambda s: s.path):
        for parts, part in zip(
            (facts, inputs), file_key_parts(source, profile, names), strict=True
        ):
            if part is not None:
                parts.append(part)
    return digest(*facts), digest(*inputs)


def file_key_parts(
    source: SourceFile, profile: Profile, names: set[str]
) -> tuple[str | None, str | None]:
    """What one file gives the tree facts' key and the inputs' key of `tree_keys` (None:
    nothing), with `names` the backends the tree registers."""
    feeds = feeds_tree_facts(source, profile, names)
    width_functions = profile.tree_width_functions
    defines = reading(
        source,
        "defines\0" + "\0".join(width_functions),
        partial(defines_any, source, width_functions),
    ) or declares_algorithm_facts(source, profile)
    whole = f"{source.path}\0{source.text_digest()}" if feeds or defines else None
    blocks = None
    if not (feeds and defines):
        found = [
            source.block_text(b)
            for b in source.blocks
            if b.kind == "class" and DataclassIndex.is_dataclass_header(source, b)
        ]
        blocks = f"{source.path}\0{digest(*found)}" if found else None
    return (whole if feeds else blocks), (whole if defines else blocks)


def file_contribution(source: SourceFile, profile: Profile, names: set[str]) -> str:
    """Everything one file gives the keys of `tree_keys` beside its code: its parts of the two
    keys, the backends it registers and the fallback mode members it mentions. Two texts of a
    file with the same code and the same contribution leave every key of a scan the same."""
    registry = sorted((n, sorted(c)) for n, c in read_registry([source], profile).items())
    return digest(
        repr(file_key_parts(source, profile, names)),
        repr(registry),
        repr(sorted(mentioned_in([source], profile))),
    )


def context_key(inputs: str, facts_value: str, launchers: dict[str, Launcher]) -> str:
    """What every file's analysis depends on beyond the file and the classes it looks up
    (`TreeFacts.context_key`): the inputs of `tree_keys`, the kernel launchers, and the tree
    facts by their value (`stable_digest`), not by the text they were read from, so that an
    edit of a file the facts are read from leaves the other files' cached analyses valid while
    the facts stay the same."""
    return digest("context", inputs, facts_value, launchers_signature(launchers))
