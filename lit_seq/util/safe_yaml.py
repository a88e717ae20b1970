"""YAML read safely: no code (``safe_load``), no alias bombs, no silently repeated keys.

``safe_load`` builds no objects, but a few lines of anchors and aliases ("billion laughs")
still expand to billions of nodes and hang the process or exhaust its memory. The document
is composed first (aliases stay shared there, so that is cheap) and its expanded size is
counted, stopping at :data:`MAX_NODES`; only a document under the limit is constructed.
A key given twice in one mapping (``safe_load`` keeps the later one) is refused as well.
"""

import yaml

# safe_load's rules (no code, YAML 1.1 types), with libyaml's parser when it is installed
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_NODES = 100_000  # a grid or config is a few hundred nodes; the limit leaves ample room


class YamlError(ValueError):
    """A file that is not valid YAML, or expands beyond :data:`MAX_NODES`; one line."""


def _expanded_size(root: yaml.Node) -> int:
    """Nodes of ``root`` as constructed (an alias counts every time), up to MAX_NODES + 1."""
    count, stack = 0, [root]
    while stack and count <= MAX_NODES:
        node = stack.pop()
        count += 1
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            _refuse_repeated_keys(node)
            stack.extend(part for pair in node.value for part in pair)
    return count


def _refuse_repeated_keys(node: yaml.MappingNode) -> None:
    seen = set()
    for key, _ in node.value:
        if isinstance(key, yaml.ScalarNode):
            if key.value in seen:
                line = key.start_mark.line + 1
                raise YamlError(f"key {key.value!r} is given twice (again at line {line})")
            seen.add(key.value)


def load_yaml(text: str, where: str) -> object:
    """The YAML document in ``text``; YamlError naming ``where`` if malformed or too large.

    Parsed once (libyaml's parser where PyYAML has it: a 10,000-value grid in a fraction of
    a second), composed, counted, and only then constructed from the composed nodes.
    """
    loader = _LOADER(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(err, "problem", None) or " ".join(str(err).split())
            raise YamlError(f"{where}: malformed YAML: {problem}{at}") from None
        if root is None:
            return None
        try:
            size = _expanded_size(root)
        except YamlError as err:
            raise YamlError(f"{where}: {err}") from None
        if size > MAX_NODES:
            raise YamlError(
                f"{where}: YAML expands to more than {MAX_NODES:,} nodes (anchors and aliases "
                "repeated into a huge document); refused"
            )
        return loader.construct_document(root)
    finally:
        loader.dispose()
