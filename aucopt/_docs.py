"""Docstring assembly: the one helper every docstring of the package is built with.

Docstrings are numpydoc: a description, then sections (``Parameters``,
``Attributes``, ...) at four spaces, whose entries are a line ``name : type`` at
four spaces followed by their text at eight. :func:`docstring` fills a template's
fields, puts paragraphs (how models merge, what sample weights do) before its
Parameters section and adds entries to its sections; :func:`entries` reads a
section's entries (a composition documents the parameters of its parts from the
parts' own docstrings).
"""
import re
import textwrap

__all__ = ["docstring", "entries", "fill"]

WIDTH = 84
_HEADER = re.compile(r"^    (\w[\w ]*)\n    (-+)[ \t]*$", re.M)


def fill(text, indent=4):
    """``text`` (its whitespace normalised) as one paragraph of at most
    :data:`WIDTH` columns, every line indented by ``indent`` spaces."""
    pad = " " * indent
    return textwrap.fill(" ".join(text.split()), WIDTH, initial_indent=pad,
                         subsequent_indent=pad)


def _split(doc):
    """``(description, [[title, body], ...])`` of a numpydoc docstring."""
    doc = doc.rstrip()
    headers = [m for m in _HEADER.finditer(doc) if len(m.group(2)) == len(m.group(1))]
    if not headers:
        return doc, []
    ends = [m.start() for m in headers[1:]] + [len(doc)]
    return doc[:headers[0].start()].rstrip(), [
        [m.group(1), doc[m.end():end].strip("\n").rstrip()] for m, end in zip(headers, ends)]


def entries(doc, section="Parameters"):
    """The entries of ``section`` of the docstring ``doc``, in order, as ``(names,
    text)``: the names its header line lists (``a, b : type`` lists two) and the
    entry as written, header line included."""
    found = []
    for title, body in _split(doc or "")[1]:
        if title != section:
            continue
        for line in body.split("\n"):
            if line.startswith("    ") and line[4:5].strip():
                found.append([line])
            elif found:
                found[-1].append(line)
    return [(tuple(n.strip() for n in lines[0].split(" : ")[0].split(",")),
             "\n".join(lines).rstrip()) for lines in found]


def docstring(doc, *, fields=None, paragraphs=(), parameters=(), attributes=()):
    """The docstring ``doc`` assembled.

    Parameters
    ----------
    doc : str
        The template: a numpydoc docstring, or a part of one (then only its fields
        are filled).
    fields : dict, optional
        Its ``{name}`` fields are filled from ``fields`` (``str.format``: literal
        braces are doubled in the template); without ``fields`` it is taken as is.
    paragraphs : sequence of str
        Paragraphs put, filled to :data:`WIDTH` columns, after the description
        (before the Parameters section).
    parameters, attributes : sequence of str
        Entries (as written, four-space header line) added at the end of the
        Parameters / Attributes section, which is made if the template has none.

    Returns
    -------
    str
    """
    if fields is not None:
        doc = doc.format(**fields)
    if not (paragraphs or parameters or attributes):
        return doc
    head, sections = _split(doc)
    head = "\n\n".join([head] + [fill(p) for p in paragraphs])
    for title, added in (("Parameters", parameters), ("Attributes", attributes)):
        if not added:
            continue
        section = next((s for s in sections if s[0] == title), None)
        if section is None:
            section = [title, ""]
            sections.insert(0 if title == "Parameters" else len(sections), section)
        section[1] = "\n".join([section[1]] * bool(section[1]) + [a.rstrip() for a in added])
    return "\n\n".join([head] + [f"    {title}\n    {'-' * len(title)}\n{body}"
                                 for title, body in sections]) + "\n    "
